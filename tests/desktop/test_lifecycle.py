"""The running Keepmind's lifecycle: `keepmind stop` from any shell, a server `keepmind mcp` starts
stops itself when idle (and the next tool call starts it again), and a start that fails says why
at once and is not retried on every call."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from keepmind.desktop.cli import main
from keepmind.desktop.mcp.server import RETRY_START_S, McpSession
from keepmind.desktop.process.client import ApiError, StartFailed, connect
from keepmind.desktop.process.files import read_server_json

QUIET = {"memory.embeddings.auto_download": False, "memory.embeddings.enabled": False}


def prepared_home(tmp_path: Path, **settings) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({**QUIET, "server.port": 0, **settings}))
    return home


def start_serve(home: Path, *extra: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "keepmind", "serve", "--home", str(home), *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    if "serving on" not in line:
        process.kill()
        raise AssertionError(f"serve did not start: {line!r} {process.stderr.read()}")
    return process


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def kill_server_of(home: Path) -> None:
    info = read_server_json(home)
    if info is not None and psutil.pid_exists(info["pid"]):
        psutil.Process(info["pid"]).terminate()
        psutil.Process(info["pid"]).wait(60)


def test_keepmind_stop_stops_the_running_server_cleanly_and_twice_is_harmless(tmp_path, capsys):
    home = prepared_home(tmp_path)
    process = start_serve(home)
    try:
        url = read_server_json(home)["url"]
        assert main(["stop", "--home", str(home)]) == 0
        assert capsys.readouterr().out.strip() == f"stopped the Keepmind at {url} (pid {process.pid})"
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "keepmind stopped" in out and not (home / "server.json").exists()
    assert main(["stop", "--home", str(home)]) == 0
    assert capsys.readouterr().out.strip() == f"no Keepmind is running for {home}: nothing to stop"
    assert main(["stop", "--home", str(tmp_path / "hom")]) == 2  # a typo is not "nothing to stop"


def test_only_the_local_token_may_shut_the_server_down(live):
    team = live.make_token("team-agent", "team")
    with live.client(team) as api:
        refused = api.post("/shutdown", json={})
    assert refused.status_code == 403 and "local token" in refused.json()["error"]
    assert not live.daemon.shutdown_requested.is_set()
    with live.client() as api:
        assert api.get("/status").status_code == 200


def test_an_idle_daemon_is_due_to_stop_only_when_nothing_is_left_to_do(tmp_path, start_live):
    live = start_live(tmp_path / "home")
    try:
        daemon = live.daemon
        assert not daemon.idle_expired()  # started without an idle limit: runs until stopped
        daemon.idle_stop_minutes = 1
        assert not daemon.idle_expired()  # just started
        daemon.activity.last -= 120
        assert daemon.idle_expired()
        sid = live.engine.open_session("personal", "work")
        live.engine.store_memory(sid, "Editor", "The user writes code in Helix.")
        daemon.activity.last -= 120
        assert live.engine.pending_work() == ["1 checkpoint(s) to curate"] and not daemon.idle_expired()
        live.engine.drain_checkpoints()
        assert daemon.idle_expired()
        with live.client() as api:
            api.get("/status")
        assert not daemon.idle_expired()  # a request is activity
        with live.client(None) as anonymous:
            daemon.activity.last -= 120
            anonymous.post("/hello", json={"challenge": "x" * 32})
        assert daemon.idle_expired()  # the identity proof every client sends first is not
    finally:
        live.stop()


def test_serve_with_an_idle_limit_stops_by_itself(tmp_path):
    home = prepared_home(tmp_path)
    process = start_serve(home, "--stop-after-idle", "0.01")  # 0.6 s
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "nothing left to do: stopping" in out and "keepmind stopped" in out
    assert read_server_json(home) is None


def test_the_server_keepmind_mcp_starts_stops_when_idle_and_comes_back_after_keepmind_stop(tmp_path, capsys):
    home = prepared_home(tmp_path, mcp={"boundary": "work"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "keepmind", "mcp", "--home", str(home)],
                                   env={**os.environ, "HF_HUB_OFFLINE": "1"})

    async def session():
        async with Client(params, read_timeout_seconds=60) as client:
            stored = await client.call_tool("store_memory", {"content": "The user writes code in Helix."})
            assert not stored.is_error, stored.content
            first = read_server_json(home)
            assert first["idle_stop_minutes"] == 30  # mcp.server_idle_minutes: never orphaned for ever
            assert main(["status", "--home", str(home)]) == 0
            assert "started by `keepmind mcp`, it stops after 30 idle minutes" in capsys.readouterr().out
            assert main(["stop", "--home", str(home)]) == 0
            assert read_server_json(home) is None and not alive(first["pid"])
            again = await client.call_tool("find_memories", {"query": "Helix"})  # the next call starts one
            assert not again.is_error, again.content
            return first, read_server_json(home)

    try:
        first, second = anyio.run(session)
    finally:
        kill_server_of(home)
    assert second is not None and second["pid"] != first["pid"]


@pytest.fixture
def taken_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_failed_start_says_why_at_once(tmp_path, taken_port):
    home = prepared_home(tmp_path, **{"server.port": taken_port})
    began = time.monotonic()
    with pytest.raises(StartFailed) as failed:
        connect(home, wait_s=60)
    assert time.monotonic() - began < 20  # not the whole wait: the child's exit ends it
    assert f"cannot listen on 127.0.0.1:{taken_port}" in failed.value.message
    assert "address already in use" in failed.value.message.lower() or "in use" in failed.value.message


def test_mcp_reports_the_cause_of_a_failed_start_and_does_not_retry_it_on_every_call(tmp_path, taken_port):
    home = prepared_home(tmp_path, **{"server.port": taken_port}, mcp={"boundary": "work"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "keepmind", "mcp", "--home", str(home)],
                                   env={**os.environ, "HF_HUB_OFFLINE": "1"})

    async def calls():
        async with Client(params, read_timeout_seconds=60) as client:
            out = []
            for _ in range(3):
                began = time.monotonic()
                result = await client.call_tool("find_memories", {"query": "anything"})
                out.append((result.is_error, result.content[0].text, time.monotonic() - began))
            return out

    try:
        results = anyio.run(calls)
    finally:
        kill_server_of(home)
    assert all(is_error for is_error, _, _ in results)
    assert all(f"cannot listen on 127.0.0.1:{taken_port}" in text for _, text, _ in results)
    assert "another port: server.port in keepmind.json" in results[0][1]  # mcp's start takes no --port
    assert all(seconds < 3 for _, _, seconds in results[1:])  # answered from memory, no new start
    assert "tried again in" in results[1][1]
    starts = (home / "logs" / "serve.log").read_text().count(f"cannot listen on 127.0.0.1:{taken_port}")
    assert starts == 1


def test_mcp_tries_a_failed_start_again_after_a_while(tmp_path):
    now = [1000.0]
    attempts = []

    def connect_fn(start=True):
        attempts.append(start)
        if start:
            raise StartFailed("Keepmind could not start: cannot listen on 127.0.0.1:8765 (Address already in use)")
        raise ApiError("Keepmind is not running")

    session = McpSession(connect_fn, "personal", "work", clock=lambda: now[0])
    for _ in range(3):
        with pytest.raises(Exception, match="Address already in use"):
            session.call("tools/find_memories", {"query": "x"})
    assert attempts == [True, False, False]  # one start; then only a look for a server someone started
    now[0] += RETRY_START_S
    with pytest.raises(Exception, match="Address already in use"):
        session.call("tools/find_memories", {"query": "x"})
    assert attempts[-1] is True


def test_a_background_start_ignores_a_keepmind_folder_in_the_clients_working_folder(tmp_path, monkeypatch):
    """An MCP client started inside a checkout of Keepmind: its `keepmind/` folder is not the package."""
    home = prepared_home(tmp_path)
    decoy = tmp_path / "checkout" / "keepmind"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("")
    (decoy / "__main__.py").write_text("raise SystemExit('the wrong keepmind')\n")
    monkeypatch.chdir(decoy.parent)
    client = connect(home, wait_s=60)
    try:
        assert client.get("/status")["memory"]["status"] in ("healthy", "degraded")
    finally:
        client.close()
        kill_server_of(home)
