"""Start at login: one file per platform, in the place that platform's session reads at login.

- Linux (and other XDG desktops): `$XDG_CONFIG_HOME/autostart/keepmind.desktop` (default
  `~/.config`), a Desktop Entry (freedesktop Desktop Application Autostart Specification).
- macOS: `~/Library/LaunchAgents/app.keepmind.tray.plist`, a LaunchAgent run at load in the
  user's GUI (Aqua) session.
- Windows: `Keepmind.cmd` in the user's Startup folder
  (`%APPDATA%\\Microsoft\\Windows\\Start Menu\\Programs\\Startup`).

The composition root passes the environment and the command that starts the tray; this module
only writes, removes and reads the file, so every platform's content is testable anywhere.
"""

from __future__ import annotations

import os
import plistlib
import sys
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

LABEL = "app.keepmind.tray"
DESKTOP_NAME = "keepmind.desktop"
CMD_NAME = "Keepmind.cmd"


@dataclass(frozen=True)
class Autostart:
    """Where this platform's login entry lives and what it says."""

    platform: str  # linux | darwin | win32
    path: Path
    content: str

    def enabled(self) -> bool:
        """This entry is the login entry (one per user: another data dir's entry is not this one)."""
        return self.written() == self.content

    def written(self) -> str | None:
        """The login entry there now, whichever data dir it starts (None: there is none)."""
        try:
            return self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def enable(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(self.content, encoding="utf-8", newline="\r\n" if self.platform == "win32" else "\n")
        tmp.replace(self.path)
        return self.path

    def disable(self) -> bool:
        """Remove the entry; False when there was none."""
        try:
            self.path.unlink()
            return True
        except FileNotFoundError:
            return False


def launch_command(*, home: Path | None = None, frozen: bool = False, executable: str = sys.executable,
                   platform: str = sys.platform) -> list[str]:
    """The command that starts the tray: the app itself when built (PyInstaller), else this
    Python running the package (pythonw on Windows: no console window; -P: a folder named
    `keepmind` where the session starts cannot stand in for the package). `--home` only when the
    data dir was chosen explicitly."""
    if frozen:
        args = [executable]
    else:
        python = executable
        if platform == "win32":
            windowless = PureWindowsPath(executable).with_name("pythonw.exe")
            python = str(windowless) if Path(str(windowless)).exists() else executable
        args = [python, "-P", "-m", "keepmind"]
    return args + (["--home", str(home)] if home is not None else [])


def desktop_exec(args: list[str]) -> str:
    """An Exec= value: arguments quoted per the Desktop Entry spec (and % doubled)."""
    def quote(arg: str) -> str:
        arg = arg.replace("%", "%%")
        if arg and not any(c in arg for c in ' \t\n"\'\\><~|&;$*?#()`='):
            return arg
        escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
        return f'"{escaped}"'
    return " ".join(quote(a) for a in args)


def linux_entry(config_home: Path, args: list[str], icon: str = "keepmind") -> Autostart:
    content = "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Name=Keepmind",
        "Comment=Local long-term memory for LLM agents",
        f"Exec={desktop_exec(args)}",
        f"Icon={icon}",
        "Terminal=false",
        "Categories=Utility;",
        "X-GNOME-Autostart-enabled=true",
        "",
    ])
    return Autostart("linux", Path(config_home) / "autostart" / DESKTOP_NAME, content)


def macos_entry(user_home: Path, args: list[str]) -> Autostart:
    plist = {
        "Label": LABEL,
        "ProgramArguments": list(args),
        "RunAtLoad": True,
        "KeepAlive": False,  # Quit means quit: launchd must not start it again
        "ProcessType": "Interactive",
        "LimitLoadToSessionType": "Aqua",  # the user's GUI session, where the menu bar is
    }
    content = plistlib.dumps(plist, fmt=plistlib.FMT_XML).decode("utf-8")
    return Autostart("darwin", Path(user_home) / "Library" / "LaunchAgents" / f"{LABEL}.plist", content)


def windows_entry(appdata: Path, args: list[str]) -> Autostart:
    command = " ".join(f'"{a}"' if " " in a or not a else a for a in args)
    content = "\n".join([
        "@echo off",
        "rem Keepmind: starts the tray at login (written by `keepmind autostart on`; delete to stop)",
        f'start "" {command}',
        "",
    ])
    folder = Path(appdata) / "Microsoft" / "Windows" / "Start Menu" / "Programs" / "Startup"
    return Autostart("win32", folder / CMD_NAME, content)


def autostart_for(args: list[str], *, platform: str = sys.platform, environ=None, icon: str = "keepmind") -> Autostart:
    """This platform's entry. `environ` is the composition root's environment (XDG_CONFIG_HOME,
    HOME, APPDATA); only the root reads os.environ."""
    environ = os.environ if environ is None else environ
    user_home = Path(environ.get("HOME") or environ.get("USERPROFILE") or Path.home())
    if platform == "darwin":
        return macos_entry(user_home, args)
    if platform == "win32":
        appdata = environ.get("APPDATA") or str(user_home / "AppData" / "Roaming")
        return windows_entry(Path(appdata), args)
    config_home = environ.get("XDG_CONFIG_HOME") or str(user_home / ".config")
    return linux_entry(Path(config_home), args, icon)


__all__ = ["Autostart", "autostart_for", "desktop_exec", "launch_command", "linux_entry", "macos_entry",
           "windows_entry"]
