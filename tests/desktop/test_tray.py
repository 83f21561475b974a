"""The tray under PYSTRAY_BACKEND=dummy: the menu as a function of the state, every action against a
real running Keepmind, and one notification per new problem (never `run()`: the dummy blocks)."""

from __future__ import annotations

import importlib
import stat
import sys
import time
from types import SimpleNamespace

import httpx
import pytest

from keepmind.desktop.process.files import read_server_json
from keepmind.desktop.tray.autostart import autostart_for
from keepmind.desktop.tray.menu import (
    SEPARATOR,
    Item,
    TrayState,
    connection_details,
    icon_state,
    menu_items,
    tooltip,
)
from keepmind.engine import Check
from keepmind.engine.writepath.checkpoints import enqueue


@pytest.fixture
def pystray(monkeypatch):
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")
    module = importlib.import_module("pystray")
    base = importlib.import_module("pystray._base")
    # pystray picks its backend once per process: use the dummy Icon whichever it picked
    return SimpleNamespace(Icon=base.Icon, Menu=module.Menu, MenuItem=module.MenuItem)


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)
        return "recorded"


@pytest.fixture
def tray(tmp_path, clock, pystray, start_live):
    from keepmind.desktop.tray.app import TrayApp

    live = start_live(tmp_path / "home", clock=clock)
    entry = autostart_for(["/opt/keepmind/keepmind"], platform="linux", environ={"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    notes, opened = Recorder(), []
    app = TrayApp(live.daemon, pystray=pystray, autostart=entry, notifier=notes, clipboard=None,
                  browser_open=lambda url: opened.append(url) or True, inline_actions=True)
    app.notes, app.opened, app.live = notes, opened, live
    yield app
    app.shutdown()


def labels(items):
    return [i.label for i in items]


# -- the menu, the icon and the tooltip are functions of the state --------------------------------------

def test_the_menu_opens_keepmind_first_and_quits_last():
    items = menu_items(TrayState(health="healthy", autostart=False))
    assert labels(items) == ["Open Keepmind", "Keepmind: memory is healthy", "-", "Pause memory", "Run doctor",
                             "Copy agent connection details", "-", "Start at login", "-", "Quit Keepmind"]
    assert items[0] == Item("Open Keepmind", "open", default=True) and [i for i in items if i.default] == [items[0]]
    assert items[1].enabled is False and items[2] == SEPARATOR
    assert [i.action for i in items if i.action] == ["open", "pause", "doctor", "copy", "autostart", "quit"]
    assert next(i for i in items if i.action == "autostart").checked is False


def test_the_menu_follows_pause_problems_and_autostart():
    warn = Check("Checkpoint backlog", "warning", "30 checkpoints waiting")
    paused = menu_items(TrayState(health="paused", paused=True, reasons=("memory is paused",), autostart=True,
                                  problems=(warn,)))
    assert "Resume memory" in labels(paused) and "Pause memory" not in labels(paused)
    assert "Run doctor (1 to look at)" in labels(paused)
    assert next(i for i in paused if i.action == "autostart").checked is True
    assert "Keepmind: memory is paused" in labels(paused)  # the reason says it: not twice
    nowhere = menu_items(TrayState(health="healthy", autostart=None))
    assert "Start at login" not in labels(nowhere) and labels(nowhere)[-1] == "Quit Keepmind"


def test_the_icon_and_tooltip_show_healthy_degraded_or_paused_with_the_reason():
    assert icon_state(TrayState(health="healthy")) == "healthy"
    assert icon_state(TrayState(health="starting")) == "healthy"
    degraded = TrayState(health="degraded", reasons=("Embeddings: only 40% are embedded", "Disk space: low"))
    assert icon_state(degraded) == "degraded"
    assert tooltip(degraded) == "Keepmind: memory is degraded: Embeddings: only 40% are embedded (+1 more)"
    assert icon_state(TrayState(health="degraded", paused=True)) == "paused"  # the person's choice wins
    assert tooltip(TrayState(health="healthy", has_menu=False)) == "Keepmind: memory is healthy (click to open)"
    long = tooltip(TrayState(health="degraded", reasons=("x" * 500,)))
    assert len(long) == 127 and long.endswith("...")


def test_connection_details_name_the_url_the_token_command_and_mcp():
    text = connection_details("http://127.0.0.1:8765", home_flag=" --home /d")
    assert "Keepmind API: http://127.0.0.1:8765/api/v1" in text
    assert "`keepmind token show --home /d`" in text and "Authorization: Bearer <token>" in text
    assert "keepmind mcp --home /d --boundary <project>" in text


# -- the actions, on a real running Keepmind --------------------------------------------------------------

def test_the_pystray_menu_is_built_from_the_menu_function_and_each_item_runs_its_action(tray):
    items = list(tray.icon.menu.items)
    assert [i.text for i in items if i is not tray.pystray.Menu.SEPARATOR] == [
        x.label for x in menu_items(tray.state) if x != SEPARATOR]
    assert items[0].default and items[0].text == "Open Keepmind"
    items[0](tray.icon)  # what pystray does on a click
    signin = tray.live.url + "/signin?code="
    assert len(tray.opened) == 1 and tray.opened[0].startswith(signin)  # signed in by a one-time link
    tray.icon.menu(tray.icon)  # what a click on the icon runs (Icon.__call__): the default item, Open
    assert len(tray.opened) == 2 and tray.opened[1].startswith(signin) and tray.opened[0] != tray.opened[1]


def test_pause_and_resume_switch_the_same_state_as_the_api_and_show_it(tray):
    api = httpx.Client(base_url=tray.live.url + "/api/v1", headers={"Authorization": f"Bearer {tray.live.token}"})
    tray.perform("pause")
    assert tray.live.engine.paused and tray.state.paused and tray.state.health == "paused"
    assert api.get("/status").json()["memory"]["status"] == "paused"
    assert tray.icon.icon is tray._image("paused") and tray.icon.title.startswith("Keepmind: memory is paused")
    assert "Resume memory" in [i.text for i in tray.icon.menu.items]
    tray.perform("resume")
    assert not tray.live.engine.paused and tray.state.health == "healthy"
    assert api.get("/status").json()["memory"]["status"] == "healthy"
    assert tray.icon.icon is tray._image("healthy")
    api.close()


def test_run_doctor_shows_the_result_and_opens_the_doctor_page_when_something_is_wrong(tray):
    tray.perform("doctor")
    title, text = tray.notes.calls[-1]
    assert title.startswith("Keepmind doctor") and tray.opened == []  # all pass on a fresh store
    assert title == "Keepmind doctor: all is well" and "checks pass" in text

    def fill(conn):
        for i in range(26):
            enqueue(conn, trigger="explicit-memory-request", payload={"title": f"t{i}", "content": f"fact {i}"},
                    audience="personal", boundary="work", session_id=None, now=tray.live.engine.now())
    tray.live.engine.write(fill)
    tray.perform("doctor")
    title, text = tray.notes.calls[-1]
    assert title == "Keepmind doctor: 1 warning" and "Checkpoint backlog: 26 checkpoints waiting" in text
    (opened,) = tray.opened
    assert opened.startswith(tray.live.url + "/signin?code=") and opened.endswith("&next=/doctor")
    assert tray.state.health == "degraded" and tray.icon.icon is tray._image("degraded")


def test_copy_puts_the_connection_details_on_the_clipboard(tray, tmp_path):
    script = tmp_path / "fake-clip"
    out = tmp_path / "clipboard.txt"
    script.write_text(f"#!/bin/sh\ncat > {out}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    tray.clipboard = [str(script)]
    tray.perform("copy")
    assert out.read_text() == connection_details(tray.live.url)
    assert tray.notes.calls[-1][0] == "Keepmind: agent connection details copied"


def test_copy_without_a_clipboard_tool_saves_the_details_and_says_where(tray):
    tray.perform("copy")
    saved = tray.live.daemon.home / "agent-connection.txt"
    assert saved.read_text() == connection_details(tray.live.url)
    assert f"saved to {saved}" in tray.notes.calls[-1][1]


def test_start_at_login_toggles_the_xdg_entry_and_its_check_mark(tray, tmp_path):
    entry = tmp_path / "cfg" / "autostart" / "keepmind.desktop"
    item = next(i for i in tray.icon.menu.items if i.text == "Start at login")
    assert item.checked is False
    item(tray.icon)
    assert entry.is_file() and "Exec=/opt/keepmind/keepmind" in entry.read_text()
    assert next(i for i in tray.icon.menu.items if i.text == "Start at login").checked is True
    tray.perform("autostart")
    assert not entry.exists() and tray.state.autostart is False


def test_quit_stops_everything_and_leaves_no_lock_or_server_json(tray):
    home = tray.live.daemon.home
    assert (home / "keepmind.lock").exists() and read_server_json(home) is not None
    next(i for i in tray.icon.menu.items if i.text == "Quit Keepmind")(tray.icon)
    assert tray.quitting.is_set()
    deadline = time.monotonic() + 15
    # the stop closes the engine, then removes server.json, then releases the lock: wait for the last
    while (home / "keepmind.lock").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tray.live.engine.closed and not tray.live.daemon.server.running
    assert not (home / "keepmind.lock").exists() and not (home / "server.json").exists()


def test_an_action_that_fails_says_so_and_the_tray_keeps_going(tray):
    tray.live.daemon.engine.close()
    tray.perform("pause")
    assert "pause failed" in tray.notes.calls[-1][1] and "keepmind.log" in tray.notes.calls[-1][1]


# -- alerts: one notification for a new problem, not one per poll -------------------------------------------

def test_a_new_warning_raises_one_notification_turns_the_icon_degraded_and_clears(tray):
    engine = tray.live.engine
    for _ in range(3):
        tray.watch.run_once(doctor=True)
    assert tray.notes.calls == [] and tray.state.health == "healthy"

    def fill(conn):
        for i in range(26):
            enqueue(conn, trigger="explicit-memory-request", payload={"title": f"t{i}", "content": f"fact {i}"},
                    audience="personal", boundary="work", session_id=None, now=engine.now())
    engine.write(fill)
    for _ in range(5):  # five polls see the same warning
        tray.watch.run_once(doctor=True)
    assert len(tray.notes.calls) == 1
    title, text = tray.notes.calls[0]
    assert title == "Keepmind needs attention: 1 new warning" and "26 checkpoints waiting" in text
    assert tray.state.health == "degraded" and tray.icon.icon is tray._image("degraded")
    assert "Checkpoint backlog" in tray.icon.title

    engine.write(lambda conn: conn.execute("UPDATE memory_checkpoints SET status='completed'"))  # curated
    tray.watch.run_once(doctor=True)
    assert tray.state.health == "healthy" and tray.icon.icon is tray._image("healthy")
    engine.write(fill)  # and when it comes back, it is new again
    tray.watch.run_once(doctor=True)
    tray.watch.run_once(doctor=True)
    assert len(tray.notes.calls) == 2


def test_doctor_runs_only_when_due_between_status_polls(tray):
    runs = []
    tray.watch._doctor = lambda: runs.append(1) or []
    now = [0.0]
    tray.watch._monotonic = lambda: now[0]
    tray.watch._doctor_at = None
    tray.watch.run_once()
    now[0] += 60
    tray.watch.run_once()
    assert len(runs) == 1  # 60 s < the 120 s doctor interval: status only
    now[0] += 61
    tray.watch.run_once()
    assert len(runs) == 2


# -- notifications and the composition root --------------------------------------------------------------

def test_notifications_use_pystray_where_it_has_them_else_the_platforms_tool(pystray):
    from keepmind.desktop.tray.system import Notifier, notify_command

    runs = []
    dummy = pystray.Icon("x")
    notifier = Notifier(dummy, platform="linux", which=lambda name: f"/usr/bin/{name}",
                        run=lambda cmd, **kw: runs.append(cmd))
    assert notifier("Title", "Text") == "notify-send"  # the dummy claims notifications but has none
    assert runs[0][:2] == ["notify-send", "--app-name=Keepmind"] and runs[0][-2:] == ["Title", "Text"]

    class Notifying:
        HAS_NOTIFICATION = True

        def notify(self, text, title):
            runs.append(("pystray", title, text))
    assert Notifier(Notifying(), platform="linux", run=None)("T", "x") == "pystray" and runs[-1] == ("pystray", "T", "x")
    mac = notify_command('Say "hi"', "back\\slash", platform="darwin", which=lambda n: n)
    assert mac == ["osascript", "-e", 'display notification "back\\\\slash" with title "Say \\"hi\\""']
    assert Notifier(None, platform="win32", which=lambda n: None)("T", "x") == "log"


def test_without_a_display_keepmind_says_so_and_serves(tmp_path):
    import os
    import signal
    import subprocess

    from keepmind.desktop.commands.tray import no_display_reason

    assert no_display_reason("linux", {}) == "no display found (neither DISPLAY nor WAYLAND_DISPLAY is set)"
    assert no_display_reason("linux", {"WAYLAND_DISPLAY": "wayland-0"}) is None
    assert no_display_reason("darwin", {}) is None and no_display_reason("win32", {}) is None

    home = tmp_path / "headless"
    home.mkdir()
    (home / "keepmind.json").write_text('{"memory.embeddings.enabled": false, "server.port": 0}')
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "PYSTRAY_BACKEND")}
    proc = subprocess.Popen([sys.executable, "-m", "keepmind", "--home", str(home)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = proc.stdout.readline()
        second = proc.stdout.readline()
        assert first.startswith("no display found") and "running as `keepmind serve`" in first
        assert "serving on http://127.0.0.1:" in second
        assert read_server_json(home)["pid"] == proc.pid
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert not (home / "server.json").exists() and not (home / "keepmind.lock").exists()


def test_with_its_server_stopped_the_menu_says_so_instead_of_opening_a_dead_address(tray):
    tray.live.daemon.server.stop()
    for action in ("open", "copy", "doctor"):
        tray.perform(action)
        assert tray.opened == [], action
        title, text = tray.notes.calls[-1]
        assert title == "Keepmind's server stopped" and "quit Keepmind from this menu and start it again" in text


def test_a_closed_engine_under_the_tray_is_logged_once_not_at_every_poll(engine, caplog):
    from keepmind.desktop.tray.watch import Watch

    watch = Watch(engine.status, lambda: [], doctor_every_s=1e9)
    watch.run_once()  # a first reading while the engine is open
    engine.close()
    with caplog.at_level("INFO", logger="keepmind"):
        readings = [watch.run_once() for _ in range(4)]
    failures = [r for r in caplog.records if "tray_status_failed" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info  # its traceback, once
    assert all("status failed" in " ".join(r.reasons) for r in readings)  # the icon still says it every time
