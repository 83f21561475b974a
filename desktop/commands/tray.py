"""`keepmind` with no command: the tray app, the composition root of the desktop program.

One instance per data dir: a second launch opens the running instance's UI in the browser, says
so and exits 0. Without a display (no DISPLAY and no WAYLAND_DISPLAY on Linux) or without any
tray backend, it says so and runs as `keepmind serve`.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
import time
import webbrowser
from pathlib import Path

from ..paths import home_of, load_home_settings

log = logging.getLogger("keepmind.tray")


def no_display_reason(platform: str, environ) -> str | None:
    """Why this session cannot show a tray icon, or None when it may (macOS and Windows always may)."""
    if platform in ("darwin", "win32") or platform.startswith("cygwin"):
        return None
    if environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"):
        return None
    return "no display found (neither DISPLAY nor WAYLAND_DISPLAY is set)"


def wait_for_server(home: Path, wait_s: float = 15.0) -> str | None:
    """The running instance's url once the server there proves it is this data dir's Keepmind (the
    check `keepmind status` makes), waiting while it is still starting; None if it does not in time."""
    from ..process.client import proves_instance
    from ..process.files import read_server_json

    deadline = time.monotonic() + wait_s
    while True:
        info = read_server_json(home)
        if info is not None and proves_instance(home, info, timeout=min(3.0, wait_s)):
            return info["url"]
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.2)


def open_running(home: Path, message: str, *, wait_s: float = 15.0) -> int:
    """A second launch: open the running instance in the browser and say so (exit 0); 1 when it
    cannot be reached (it is not opened, and why is said)."""
    from ..process.instance import unreached
    from ..tray.links import open_url

    url = wait_for_server(home, wait_s)
    if url is None:
        found = unreached(home)
        if found.starting:
            line = f"{message} (it has not said where it serves yet: try again in a moment)"
            log.info("keepmind_already_running %s", line)
            print(line, flush=True)
            return 0
        why = f"{found.who}: {found.reason}" if found.running else "it stopped as this one started: start it again"
        line = f"Keepmind is already running for {home} but cannot be opened ({why}); `keepmind status` says more"
        log.info("keepmind_already_running_unreachable %s", line)  # INFO: stderr has the error line already
        print(f"error: {line}", file=sys.stderr, flush=True)
        return 1
    link = open_url(home, url)
    opened = webbrowser.open(link)
    line = f"Keepmind is already running for {home} at {url}: " + (
        "opened it in your browser" if opened else f"open {link} in your browser")
    log.info("keepmind_already_running url=%s opened=%s", url, opened)  # not the link: it signs a browser in
    print(line, flush=True)
    return 0


def cmd_tray(args) -> int:
    from ..process.daemon import Daemon
    from ..process.lock import AlreadyRunning
    from ..process.logs import log_path, remove_file_log, setup_file_log
    from .autostart import login_entry
    from .serve import log_failure, run_headless, serve_until_signal
    from .writepath import llm_api_key

    home = home_of(args)
    why = no_display_reason(sys.platform, os.environ)
    if why is not None:
        print(f"{why}: running as `keepmind serve`, without a tray icon", flush=True)
        return run_headless(home)
    file_log = setup_file_log(home)
    try:
        settings = load_home_settings(home)
        daemon = Daemon(home, settings=settings, llm_api_key=llm_api_key(settings))
        try:
            daemon.start()
        except AlreadyRunning as exc:
            return open_running(home, exc.message)
        try:
            from ..tray.backend import load_pystray, x11_tray_host

            pystray = load_pystray()
        except Exception as exc:  # noqa: BLE001 - ImportError, or a display that refuses us (Xlib)
            print(f"no system tray is available ({' '.join(str(exc).split())[:200]}): running as "
                  "`keepmind serve`, without a tray icon", flush=True)
            return serve_until_signal(daemon, start=False)
        app = make_app(daemon, pystray, args, settings, login_entry)
        app.install_signal_handlers()
        if app.backend == "xorg" and x11_tray_host() is False:
            # The icon would be a 1x1 window nobody sees: say so, and how to reach Keepmind without it
            log.warning("tray_no_host display=%s", os.environ.get("DISPLAY"))
            print(f"keepmind running on {daemon.url}, but this display has no system tray (notification area), "
                  f"so its icon cannot show: `keepmind open` opens it in the browser, `keepmind stop` ends it "
                  f"(data dir {home}, logs in {log_path(home)}). For the icon, start a panel with a "
                  "notification area, then `keepmind stop` and `keepmind` again.", flush=True)
        else:
            print(f"keepmind running in the tray ({app.backend}) on {daemon.url} (data dir {home}, logs in "
                  f"{log_path(home)}); Quit from its menu, or Ctrl-C", flush=True)
        app.run()  # blocks until Quit, SIGTERM or SIGINT; then stops everything in order
        print("keepmind stopped", flush=True)
        return 0
    except Exception as exc:
        log_failure(exc, home, file_log)
        raise
    finally:
        remove_file_log(file_log)


def make_app(daemon, pystray, args, settings, login_entry):
    """The TrayApp with this desktop's clipboard, login entry and the commands it tells agents."""
    from ..tray.app import TrayApp
    from ..tray.system import clipboard_command

    explicit = getattr(args, "home", None)
    frozen = bool(getattr(sys, "frozen", False))
    try:
        autostart = login_entry(explicit)
    except Exception:  # noqa: BLE001 - no login entry on this platform: the menu leaves it out
        autostart = None
    return TrayApp(
        daemon, pystray=pystray, autostart=autostart,
        clipboard=clipboard_command(wayland=bool(os.environ.get("WAYLAND_DISPLAY"))),
        home_flag=f" --home {shlex.quote(str(Path(explicit).expanduser()))}" if explicit else "",
        command=shlex.quote(sys.executable) if frozen else "keepmind",
        status_every_s=settings["tray.status_seconds"], doctor_every_s=settings["tray.doctor_seconds"],
    )
