"""The tray app: owns the pystray icon over a running Daemon, keeps it in step with the watch, and
runs the menu's actions.

`TrayApp(daemon, pystray=...)` builds the icon (nothing shows until `run()`, which blocks on the
main thread: macOS requires it). Every menu item comes from `menu_items(state)` and runs
`perform(action)`; Quit, SIGTERM and SIGINT all end in `shutdown()`: the watch, then the Daemon
(server, workers with their leases released, writer, database, server.json, lock).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import webbrowser
from dataclasses import replace
from pathlib import Path
from typing import Callable

from keepmind.engine import Check, write_private

from ..process.health import check_server
from ..process.logs import log_path
from .autostart import Autostart
from .backend import backend_name, flatten, icon_class_for
from .icons import icon_file, icon_image
from .links import open_url
from .menu import TrayState, connection_details, doctor_summary, icon_state, menu_items, tooltip
from .system import Notifier, copy_text, notify_command, pystray_notifies
from .watch import Reading, Watch

log = logging.getLogger("keepmind.tray")
CONNECTION_FILE = "agent-connection.txt"


class TrayApp:
    """The icon, its menu and alerts for one running Daemon."""

    def __init__(self, daemon, *, pystray, autostart: Autostart | None = None,
                 notifier: Callable[[str, str], str] | None = None, clipboard: list[str] | None = None,
                 browser_open: Callable[[str], bool] = webbrowser.open, home_flag: str = "",
                 command: str = "keepmind", status_every_s: float = 5.0, doctor_every_s: float = 120.0,
                 inline_actions: bool = False):
        self.daemon = daemon
        self.pystray = pystray
        self.autostart = autostart
        self.clipboard = clipboard
        self.browser_open = browser_open
        self.home_flag = home_flag
        self.command = command
        self.inline_actions = inline_actions  # tests run actions on the calling thread
        self.quitting = threading.Event()
        self._shown = False
        self._in_loop = False
        self._loop_done = threading.Event()
        self._images: dict[str, object] = {}
        self.backend = backend_name(pystray.Icon)
        self.clicks = self.backend == "xorg"  # the X11 fallback: a left click opens the UI (backend.py)
        self.icon = icon_class_for(pystray.Icon)("keepmind", icon=None, title="Keepmind is starting",
                                                 menu=pystray.Menu(self._pystray_items))
        self.notify = notifier or Notifier(self.icon, icon_path=str(icon_file("healthy", 64)))
        can_notify = pystray_notifies(self.icon) or notify_command("", "") is not None
        self.state = TrayState(paused=daemon.engine.paused, url=daemon.url,
                               autostart=autostart.enabled() if autostart is not None else None,
                               has_menu=bool(getattr(self.icon, "HAS_MENU", True)), has_notifications=can_notify)
        self.icon.icon = self._image(icon_state(self.state))
        # The first doctor run waits a little: models load in the background at start, and one
        # that is merely still loading must not raise an alert.
        self.watch = Watch(daemon.engine.status, self.doctor, on_reading=self.apply,
                           status_every_s=status_every_s, doctor_every_s=doctor_every_s,
                           first_doctor_s=min(30.0, doctor_every_s))

    # -- what is shown ----------------------------------------------------------------------------

    def _image(self, state: str):
        if state not in self._images:
            image = icon_image(state, 64)
            self._images[state] = flatten(image) if self.backend == "xorg" else image
        return self._images[state]

    def _pystray_items(self):
        """pystray's items for the current state (pystray calls this whenever it builds the menu)."""
        Item, separator = self.pystray.MenuItem, self.pystray.Menu.SEPARATOR
        out = []
        for item in menu_items(self.state):
            if item.action is None and item.label == "-":
                out.append(separator)
                continue
            checked = None if item.checked is None else _constant(item.checked)
            action = self._runner(item.action) if item.action else None
            out.append(Item(item.label, action, checked=checked, default=item.default, enabled=item.enabled))
        return tuple(out)

    def _runner(self, name: str):
        def run(icon, menu_item):  # pystray counts the parameters: exactly (icon, item)
            self.submit(name)
        return run

    def set_state(self, state: TrayState) -> None:
        """Show `state`: icon image, tooltip and menu (the icon is touched only while it is up)."""
        self.state = state
        if self.quitting.is_set():
            return
        self.icon.icon = self._image(icon_state(state))
        self.icon.title = tooltip(state)
        if self._shown:
            self.icon.update_menu()

    def apply(self, reading: Reading) -> None:
        """The watch's reading: new state, and one notification for problems that are new."""
        self.set_state(replace(self.state, health=reading.health, reasons=reading.reasons,
                               problems=reading.problems, paused=reading.paused))
        if reading.new_problems:
            self.alert(reading.new_problems)

    def alert(self, problems: tuple[Check, ...]) -> None:
        n = len(problems)
        errors = any(c.level == "error" for c in problems)
        title = f"Keepmind needs attention: {n} new {'problem' if errors else 'warning'}{'s' if n != 1 else ''}"
        self.notify(title, "\n".join(f"{c.name}: {c.message}" for c in problems)[:1000])

    # -- actions ------------------------------------------------------------------------------------

    def submit(self, action: str) -> None:
        """Run a menu action off the backend's event loop (it may open a browser or run doctor)."""
        if self.inline_actions:
            self.perform(action)
        else:
            threading.Thread(target=self.perform, args=(action,), name=f"keepmind-tray-{action}", daemon=True).start()

    def perform(self, action: str) -> None:
        handler = getattr(self, f"do_{action}", None)
        if handler is None:
            raise ValueError(f"no tray action {action!r}")
        try:
            handler()
        except Exception as exc:  # noqa: BLE001 - an action that fails says so; the tray keeps running
            log.exception("tray_action_failed action=%s", action)
            self.notify("Keepmind", f"{action} failed: {exc}; see {log_path(self.daemon.home)}")

    def _server_down(self) -> bool:
        """Our own HTTP server stopped (the pages and agents cannot reach Keepmind): say so, and
        open no page at a dead address."""
        if self.daemon.server.running:
            return False
        self.notify("Keepmind's server stopped", f"Pages and agents cannot reach {self.daemon.url}: quit Keepmind "
                    f"from this menu and start it again (the log says why: {log_path(self.daemon.home)})")
        return True

    def do_open(self) -> None:
        if self._server_down():
            return
        self.browser_open(open_url(self.daemon.home, self.daemon.url))

    def do_pause(self) -> None:
        self.daemon.engine.pause()
        self.watch.run_once(doctor=False)

    def do_resume(self) -> None:
        self.daemon.engine.resume()
        self.watch.run_once(doctor=False)

    def doctor(self) -> list[Check]:
        """The engine's checks and the desktop's: does our own server answer?"""
        server = check_server(self.daemon.url, self.daemon.token, pid=os.getpid(), logs=log_path(self.daemon.home))
        return self.daemon.engine.doctor() + [server]

    def do_doctor(self) -> None:
        """Run doctor now: show the result, and open the doctor page when something is wrong."""
        checks = self.doctor()
        self.watch.record_doctor(checks)  # a person saw these: the watch does not alert them again
        self.watch.run_once(doctor=False)
        title, text = doctor_summary(checks)
        self.notify(title, text)
        if any(c.level != "pass" for c in checks) and not self._server_down():
            self.browser_open(open_url(self.daemon.home, self.daemon.url, "/doctor"))

    def do_copy(self) -> None:
        if self._server_down():
            return
        text = connection_details(self.daemon.url, home_flag=self.home_flag, command=self.command)
        if copy_text(text, self.clipboard):
            self.notify("Keepmind: agent connection details copied", text)
            return
        path = Path(self.daemon.home) / CONNECTION_FILE
        write_private(path, text)  # owner-only, like every file of the data dir
        self.notify("Keepmind: agent connection details", f"No clipboard tool found; saved to {path}\n\n{text}")

    def do_autostart(self) -> None:
        if self.autostart is None:
            return
        self.autostart.disable() if self.autostart.enabled() else self.autostart.enable()
        self.set_state(replace(self.state, autostart=self.autostart.enabled()))

    def do_quit(self) -> None:
        self.quit()

    # -- lifecycle ------------------------------------------------------------------------------------

    def _setup(self, icon) -> None:
        """pystray's setup (its own thread, once the loop runs): show the icon, start watching."""
        icon.visible = True
        self._shown = True
        self.set_state(self.state)
        self.watch.start()
        log.info("tray_shown backend=%s url=%s", self.backend, self.daemon.url)
        if self.quitting.is_set():  # a signal arrived while the icon was coming up
            icon.stop()

    def run(self) -> None:
        """Show the icon and handle its events until Quit (blocks; the main thread), then stop it all."""
        self._in_loop = True
        try:
            self.icon.run(setup=self._setup)
        finally:
            self._loop_done.set()
            self.shutdown()

    def quit(self) -> None:
        """Quit, from the menu, a signal handler or any thread: everything stops, then `run()` returns."""
        if self.quitting.is_set():
            return
        self.quitting.set()
        log.info("tray_quit")
        # Never from a signal handler on the loop's own thread: pystray's stop waits for its loop.
        threading.Thread(target=self._quit_now, name="keepmind-tray-quit", daemon=True).start()

    def _quit_now(self) -> None:
        """The icon first (DESIGN's order: tray, server, workers, writer, database): `run()` then
        returns on the main thread and shuts the Daemon down."""
        try:
            self.icon.stop()
        except Exception:  # noqa: BLE001 - the icon's loop may be gone already
            log.exception("tray_icon_stop_failed")
        if not self._in_loop:
            self.shutdown()  # no loop to return (never shown): stop here
        elif not self._loop_done.wait(3.0):
            # A toolkit loop that does not return must not keep a dead Keepmind in the tray: stop
            # everything in order from here, then leave.
            log.error("tray_loop_did_not_stop: stopping and exiting")
            self.shutdown()
            logging.shutdown()
            os._exit(0)

    def shutdown(self) -> None:
        """The watch, then the Daemon: server, workers, writer, database, server.json, lock. Idempotent."""
        self.quitting.set()
        self.watch.stop(timeout_s=2.0)  # a doctor run in progress fails harmlessly once the engine closes
        self.daemon.stop()

    def install_signal_handlers(self) -> dict:
        """SIGTERM and SIGINT quit like the menu's Quit; returns the handlers they replaced."""
        return {s: signal.signal(s, lambda *_: self.quit()) for s in (signal.SIGTERM, signal.SIGINT)}


def _constant(value):
    def read(menu_item):
        return value
    return read


__all__ = ["CONNECTION_FILE", "TrayApp"]
