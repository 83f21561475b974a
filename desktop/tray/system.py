"""What the tray asks of the desktop besides its icon: a notification, the clipboard.

Notifications go through pystray's `notify` where the backend has them (Windows, macOS,
AppIndicator), else through the platform's own tool: `notify-send` on Linux, `osascript` on macOS.
The clipboard goes through the platform's tool (wl-copy, xclip, xsel, pbcopy, clip).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from typing import Callable

log = logging.getLogger("keepmind.tray")
Run = Callable[..., subprocess.CompletedProcess]


def applescript_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def notify_command(title: str, text: str, *, platform: str = sys.platform, which=shutil.which,
                   icon_path: str | None = None) -> list[str] | None:
    """The platform's command that shows a desktop notification, or None when it has none."""
    if platform == "darwin" and which("osascript"):
        return ["osascript", "-e", f"display notification {applescript_string(text)} "
                                   f"with title {applescript_string(title)}"]
    if platform not in ("darwin", "win32") and which("notify-send"):
        return ["notify-send", "--app-name=Keepmind"] + (["--icon", icon_path] if icon_path else []) + [title, text]
    return None


def pystray_notifies(icon) -> bool:
    """The backend shows notifications itself (pystray's dummy backend claims it but cannot)."""
    return bool(getattr(icon, "HAS_NOTIFICATION", False)) and type(icon).__module__ != "pystray._base"


class Notifier:
    """Shows a notification the best way this desktop offers; records what it showed."""

    def __init__(self, icon=None, *, platform: str = sys.platform, which=shutil.which, run: Run = subprocess.run,
                 icon_path: str | None = None):
        self.icon = icon
        self.platform = platform
        self.which = which
        self.run = run
        self.icon_path = icon_path
        self.shown: list[tuple[str, str, str]] = []  # (title, text, how)

    def __call__(self, title: str, text: str) -> str:
        """Show it; returns how ("pystray", the command's name, or "log" when nothing could)."""
        how = self._show(title, text)
        self.shown.append((title, text, how))
        if how == "log":  # no one saw it: the log is where the problem is said, so say all of it
            log.warning("tray_notification how=log title=%s text=%s", title, " | ".join(text.splitlines()))
        else:
            log.info("tray_notification how=%s title=%s", how, title)
        return how

    def _show(self, title: str, text: str) -> str:
        if self.icon is not None and pystray_notifies(self.icon):
            try:
                self.icon.notify(text, title)
                return "pystray"
            except Exception:  # noqa: BLE001 - fall back to the platform's tool
                log.warning("tray_notify_failed backend=pystray", exc_info=True)
        command = notify_command(title, text, platform=self.platform, which=self.which, icon_path=self.icon_path)
        if command is not None:
            try:
                self.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         timeout=10, check=True)
                return command[0]
            except (OSError, subprocess.SubprocessError):
                log.warning("tray_notify_failed command=%s", command[0], exc_info=True)
        return "log"


def clipboard_command(*, platform: str = sys.platform, which=shutil.which, wayland: bool = False) -> list[str] | None:
    """The platform's command that copies its standard input to the clipboard, or None."""
    if platform == "darwin":
        return ["pbcopy"] if which("pbcopy") else None
    if platform == "win32":
        return ["clip"] if which("clip") else None
    candidates = ([["wl-copy"]] if wayland else []) + [["xclip", "-selection", "clipboard"],
                                                       ["xsel", "--clipboard", "--input"]]
    return next((c for c in candidates if which(c[0])), None)


def copy_text(text: str, command: list[str] | None, run: Run = subprocess.run) -> bool:
    """Put `text` on the clipboard with `command`; False when there is no way to."""
    if command is None:
        return False
    try:
        # xclip and xsel stay behind to own the selection: they must not hold our pipes open
        run(command, input=text.encode("utf-8"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            timeout=10, check=True)
        return True
    except (OSError, subprocess.SubprocessError):
        log.warning("tray_copy_failed command=%s", command[0], exc_info=True)
        return False


__all__ = ["Notifier", "applescript_string", "clipboard_command", "copy_text", "notify_command", "pystray_notifies"]
