"""The data dir's lock is the last word on whether a Keepmind runs: a clean stop removes only its
own lock file, and status, stop, pause, doctor and a second tray launch say "running (pid N) but
..." for a server whose server.json is missing, unreadable or not its own, or that is suspended,
instead of "not running". A stop of a server that could not clean up still ends promptly, and a
start that fails leaves its reason in keepmind.log."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from keepmind.desktop.cli import main
from keepmind.desktop.commands.lifecycle import _logs, stopped
from keepmind.desktop.commands.serve import idle_minutes
from keepmind.desktop.commands.tray import open_running
from keepmind.desktop.process import daemon as daemon_module
from keepmind.desktop.process.files import read_server_json, write_server_json
from keepmind.desktop.process.health import check_server_of
from keepmind.desktop.process.lock import AlreadyRunning, DataDirLock, lock_holder
from keepmind.desktop.tray.menu import TrayState, tooltip
from keepmind.desktop.tray.system import Notifier

QUIET = {"memory.embeddings.auto_download": False, "memory.embeddings.enabled": False}


def prepared_home(tmp_path: Path, **settings) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({**QUIET, "server.port": 0, **settings}))
    return home


@pytest.fixture
def serving(tmp_path):
    """A real `keepmind serve` on a free loopback port; killed at the end if a test left it running."""
    home = prepared_home(tmp_path)
    process = subprocess.Popen([sys.executable, "-m", "keepmind", "serve", "--home", str(home)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if "serving on" not in line:
        process.kill()
        raise AssertionError(f"serve did not start: {line!r} {process.stderr.read()}")
    yield home, process
    if process.poll() is None:
        if psutil.Process(process.pid).status() == psutil.STATUS_STOPPED:
            process.send_signal(signal.SIGCONT)
        process.kill()
    process.communicate(timeout=30)


# -- A: a stop removes only its own lock file ------------------------------------------------------

def test_a_stop_never_removes_the_lock_of_an_instance_started_after_its_lock_file_was_deleted(tmp_path):
    first = DataDirLock(tmp_path)
    first.acquire()
    first.path.unlink()  # someone deletes keepmind.lock while the first one runs
    second = DataDirLock(tmp_path)
    second.acquire()  # so a second instance starts, with a new lock file
    first.release()
    assert second.path.exists() and lock_holder(tmp_path) == os.getpid()  # still the second one's
    second.release()
    assert not second.path.exists() and lock_holder(tmp_path) is None


def test_a_keepmind_whose_lock_file_was_deleted_still_keeps_a_second_one_from_starting(serving, capsys):
    """The OS lock is on a file: deleted by hand, a new one at the path locks at once. The running
    server still proves it is the one server.json names, so a second start is refused all the same."""
    home, process = serving
    (home / "keepmind.lock").unlink()
    second = DataDirLock(home)
    with pytest.raises(AlreadyRunning, match=rf"already running .* \(pid {process.pid}\), though its keepmind.lock "
                                             "was deleted"):
        second.acquire()
    assert not second.held and not (home / "keepmind.lock").exists()  # nothing of the refused start is left
    assert main(["serve", "--home", str(home)]) != 0  # and `keepmind serve` says so
    assert "though its keepmind.lock was deleted" in capsys.readouterr().err
    assert process.poll() is None  # the running one runs on


# -- B: a live lock holder is running, whatever server.json says -----------------------------------

def test_a_server_whose_server_json_was_removed_is_running_and_stop_ends_it(serving, capsys):
    home, process = serving
    (home / "server.json").unlink()
    assert main(["status", "--home", str(home)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"server: running (pid {process.pid}) but its server.json is missing")
    assert "`keepmind stop --home" in out and "no Keepmind is running" not in out
    assert main(["stop", "--home", str(home)]) == 0
    assert capsys.readouterr().out.startswith(f"stopped the Keepmind of pid {process.pid} with SIGTERM")
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "keepmind stopped" in out, err
    assert lock_holder(home) is None and not (home / "keepmind.lock").exists()


def test_an_unreadable_server_json_is_said_by_status_pause_doctor_and_token_revoke(serving, capsys):
    home, process = serving
    (home / "server.json").write_text("{not json")
    assert main(["status", "--home", str(home), "--json"]) == 1
    server = json.loads(capsys.readouterr().out)["server"]
    assert server["running"] is True and server["answering"] is False and server["pid"] == process.pid
    assert "server.json cannot be used (it is not valid JSON)" in server["reason"]
    assert main(["pause", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("memory: paused (set in the store, which the running Keepmind reads: Keepmind is "
                          f"running (pid {process.pid}) but its server.json cannot be used")
    assert "no Keepmind is running" not in out
    check = check_server_of(home)
    assert check.level == "error" and f"Keepmind is running (pid {process.pid})" in check.message
    assert "`keepmind stop` ends it" in check.message
    assert main(["token", "revoke", "local", "--home", str(home)]) == 2  # its tray and agents hold that token
    assert f"Keepmind is running (pid {process.pid})" in capsys.readouterr().err


def test_a_suspended_server_is_said_to_be_suspended_not_left_behind_by_a_crash(serving, capsys):
    home, process = serving
    process.send_signal(signal.SIGSTOP)
    assert main(["status", "--home", str(home)]) == 1
    out = capsys.readouterr().out
    assert f"server: running (pid {process.pid}) but it is suspended" in out
    assert f"`kill -CONT {process.pid}` resumes it" in out and "crash" not in out
    assert main(["stop", "--home", str(home)]) == 0  # SIGTERM, and SIGCONT so that it handles it
    assert capsys.readouterr().out.startswith(f"stopped the Keepmind of pid {process.pid} with SIGTERM")
    process.communicate(timeout=30)
    assert process.returncode == 0


def test_stop_leaves_a_lock_holder_that_is_not_keepmind_alone(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    holder = DataDirLock(home)
    holder.acquire()  # this test process (pytest), not a Keepmind
    try:
        assert main(["stop", "--home", str(home), "--wait", "1"]) == 1
        err = capsys.readouterr().err
        assert f"Keepmind is running (pid {os.getpid()}) but its server.json is missing" in err
        assert "it cannot be stopped from here: end that process yourself" in err
    finally:
        holder.release()


# -- C: a server that could not clean up has still stopped -------------------------------------------

def test_stop_sees_a_gone_process_at_once_even_if_its_server_json_stays(serving):
    home, process = serving
    process.send_signal(signal.SIGKILL)  # gone, and server.json still names it (as after "Permission denied")
    process.communicate(timeout=30)
    assert read_server_json(home)["pid"] == process.pid
    began = time.monotonic()
    assert stopped(home, process.pid, 10.0)
    assert time.monotonic() - began < 2


def test_the_lock_is_released_even_when_server_json_cannot_be_removed(tmp_path, start_live, monkeypatch):
    live = start_live(tmp_path / "home")
    home = live.daemon.home

    def refuse(home, pid):
        raise PermissionError(13, "Permission denied", str(Path(home) / "server.json"))

    monkeypatch.setattr(daemon_module, "remove_server_json", refuse)  # a data dir made 0500 while it ran
    with pytest.raises(PermissionError):
        live.daemon.stop()
    assert lock_holder(home) is None
    again = DataDirLock(home)
    again.acquire()
    again.release()


def test_a_failed_stop_points_at_the_log_the_server_writes(tmp_path):
    home = prepared_home(tmp_path)
    (home / "logs").mkdir()
    (home / "logs" / "serve.log").write_text("")
    assert _logs(home, {"url": "u", "pid": 1}) == str(home / "logs" / "keepmind.log")  # a tray, a foreground serve
    assert _logs(home, {"url": "u", "pid": 1, "idle_stop_minutes": 30}) == (
        f"{home / 'logs' / 'keepmind.log'} and {home / 'logs' / 'serve.log'}")  # started by `keepmind mcp`


# -- D: a failed start says why in keepmind.log ------------------------------------------------------

@pytest.fixture
def taken_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_serve_or_tray_start_that_fails_leaves_its_reason_in_keepmind_log(tmp_path, taken_port, monkeypatch):
    home = prepared_home(tmp_path, **{"server.port": taken_port})
    monkeypatch.setenv("DISPLAY", ":0")  # the tray's own path, which fails before it needs a display
    assert main(["--home", str(home)]) == 2
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["serve", "--home", str(home)]) == 2
    log = (home / "logs" / "keepmind.log").read_text()
    assert log.count(f"keepmind_failed error: cannot listen on 127.0.0.1:{taken_port}") == 2, log


def test_a_serve_that_finds_one_running_logs_why_and_not_that_keepmind_stopped(tmp_path, start_live):
    live = start_live(tmp_path / "home")
    try:
        assert main(["serve", "--home", str(live.daemon.home)]) == 2
    finally:
        live.stop()
    log = (live.daemon.home / "logs" / "keepmind.log").read_text()
    assert "keepmind_failed error: Keepmind is already running for this data dir" in log
    assert "keepmind_stopped" not in log  # the one running did not stop


# -- E: a second tray launch checks the server before it opens it ------------------------------------

def test_a_second_launch_does_not_open_a_server_json_that_names_a_stranger(tmp_path, start_live, capsys, monkeypatch):
    opened = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url) or True)
    live = start_live(tmp_path / "home")
    try:
        home = live.daemon.home
        assert open_running(home, "already running", wait_s=0.5) == 0
        assert len(opened) == 1 and f"at {live.url}: opened it in your browser" in capsys.readouterr().out
        write_server_json(home, "http://127.0.0.1:9", 1, "x")
        assert open_running(home, "already running", wait_s=0.5) == 1
        err = capsys.readouterr().err
        assert "cannot be opened" in err and "server.json names another process (pid 1 at http://127.0.0.1:9)" in err
        assert len(opened) == 1  # nothing more was opened
    finally:
        live.stop()


# -- F: the small things -----------------------------------------------------------------------------

def test_the_paused_tooltip_says_paused_once():
    state = TrayState(health="paused", paused=True,
                      reasons=("memory is paused (since 2024-05-01T10:00:00Z): `keepmind resume` turns it back on",))
    assert tooltip(state) == "Keepmind: memory is paused (since 2024-05-01T10:00:00Z): `keepmind resume` turns it " \
                             "back on"


def test_a_notification_no_one_could_see_logs_its_text(caplog):
    with caplog.at_level(logging.INFO, logger="keepmind.tray"):
        assert Notifier(None, platform="win32", which=lambda n: None)(
            "Keepmind needs attention: 1 new warning", "Disk space: 2 GB left\nBackups: none yet") == "log"
    assert "Disk space: 2 GB left | Backups: none yet" in caplog.text


def test_one_idle_minute_is_singular():
    assert idle_minutes(1) == "1 idle minute" and idle_minutes(30) == "30 idle minutes"
    assert idle_minutes(0.5) == "0.5 idle minutes"


def test_a_client_waits_on_the_holder_instead_of_starting_a_second_serve(serving):
    from keepmind.desktop.process.client import ApiError, StartFailed, connect

    home, process = serving
    (home / "server.json").unlink()
    with pytest.raises(ApiError) as raised:
        connect(home, wait_s=1.5)
    assert not isinstance(raised.value, StartFailed)  # no second `keepmind serve` was tried
    assert f"running (pid {process.pid}) but its server.json is missing" in raised.value.message
    assert "`keepmind stop --home" in raised.value.message
    assert not [c for c in psutil.Process().children(recursive=True) if "serve" in " ".join(c.cmdline())
                and c.pid != process.pid]
