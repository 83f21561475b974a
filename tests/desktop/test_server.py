"""The daemon in-process: waitress really stops, server.json and the token file, one instance per dir."""

from __future__ import annotations

import json
import socket
import stat
import threading

import httpx
import pytest

from keepmind.desktop.process.daemon import Daemon
from keepmind.desktop.process.files import read_server_json
from keepmind.desktop.process.http import ApiServer
from keepmind.desktop.process.lock import AlreadyRunning
from keepmind.engine import tokens


def waitress_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("waitress-") or t.name == "keepmind-http"]


def test_stop_closes_keepalive_channels_and_ends_every_thread(live):
    server = live.daemon.server
    client = live.client()
    assert client.get("/status").status_code == 200  # leaves a keep-alive channel open
    assert len(server._map) >= 3  # listener, trigger, the client's channel
    assert len(server.dispatcher.threads) == 4
    server.stop()
    assert not server.running
    assert server._map == {}
    assert server.dispatcher.threads == set() or len(server.dispatcher.threads) == 0
    assert waitress_threads() == []
    with pytest.raises(httpx.TransportError):
        client.get("/status")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
    client.close()


def test_stop_lets_a_running_request_finish():
    entered, release = threading.Event(), threading.Event()

    def slow_app(environ, start_response):
        entered.set()
        release.wait(10)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"done"]

    server = ApiServer(slow_app, 0, threads=2).start()
    result = {}
    request = threading.Thread(target=lambda: result.update(r=httpx.get(server.url + "/", timeout=10)))
    request.start()
    assert entered.wait(10)
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    release.set()
    request.join(10)
    stopper.join(10)
    assert result["r"].status_code == 200 and result["r"].text == "done"
    assert not server.running and waitress_threads() == []


def test_daemon_writes_server_json_and_a_0600_token_and_cleans_up(tmp_path, clock, start_live):
    home = tmp_path / "home"
    live = start_live(home, clock=clock)
    info = read_server_json(home)
    assert info["url"] == live.url and info["pid"] > 0
    token_file = home / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert token_file.read_text().strip() == live.token
    with live.engine.db.snapshot() as conn:
        stored = conn.execute("SELECT token_hash FROM api_tokens").fetchall()
    assert live.token not in json.dumps(stored)  # only the hash is stored
    live.stop()
    assert not (home / "server.json").exists()
    assert live.engine.closed and not live.daemon.server.running
    live.stop()  # idempotent


def test_one_instance_per_data_dir(tmp_path, clock, start_live):
    home = tmp_path / "home"
    first = start_live(home, clock=clock)
    try:
        with pytest.raises(AlreadyRunning, match="already running.*" + first.url):
            start_live(home, clock=clock)
        assert read_server_json(home)["url"] == first.url  # the refused one changed nothing
    finally:
        first.stop()
    second = start_live(home, clock=clock)  # the lock was released
    second.stop()


def test_shutdown_order_is_server_then_engine(live, monkeypatch):
    order = []
    server_stop, engine_close = live.daemon.server.stop, live.engine.close
    monkeypatch.setattr(live.daemon.server, "stop", lambda: (order.append("server"), server_stop()))
    monkeypatch.setattr(live.engine, "close", lambda: (order.append(f"engine(http running={live.daemon.server.running})"),
                                                       engine_close()))
    live.stop()
    assert order == ["server", "engine(http running=False)"]


def test_the_local_token_is_kept_across_restarts_and_replaced_when_revoked(tmp_path, clock, start_live):
    home = tmp_path / "home"
    live = start_live(home, clock=clock)
    first = live.token
    live.stop()
    live = start_live(home, clock=clock)
    assert live.token == first
    live.engine.write(tokens.revoke, "local", live.engine.now())
    live.stop()
    live = start_live(home, clock=clock)
    try:
        assert live.token != first
        assert (home / "token").read_text().strip() == live.token
        with live.client() as api:
            assert api.get("/status").json()["token"]["name"] == "local"  # the revoked one holds the name no more
        with live.client(first) as api:
            assert api.get("/status").status_code == 401
    finally:
        live.stop()


def test_a_failed_start_releases_everything(tmp_path, clock, start_live):
    home = tmp_path / "home"
    (home).mkdir()
    (home / "keepmind.json").write_text('{"server.port": "not a port"}')
    with pytest.raises(Exception, match="server.port"):
        Daemon(home, port=0, start_workers=False).start()
    assert not (home / "server.json").exists()
    (home / "keepmind.json").write_text("{}")
    start_live(home, clock=clock).stop()  # the lock is free again


def test_a_taken_port_is_an_error_that_says_what_to_do(tmp_path, clock, live):
    from keepmind.desktop.process.daemon import PortInUse
    from keepmind.engine.settings import defaults

    daemon = Daemon(tmp_path / "other", port=live.port, settings=defaults(), clock=clock, start_workers=False)
    with pytest.raises(PortInUse, match=f"cannot listen on 127.0.0.1:{live.port}.*--port"):
        daemon.start()
    assert not (tmp_path / "other" / "server.json").exists()
    assert not (tmp_path / "other" / "keepmind.db").exists()  # said before the store and models were opened


def test_stop_survives_a_loop_that_ends_between_its_check_and_its_pull():
    """Seen once in CI: the loop thread ended and closed its trigger after stop() saw it alive;
    pulling the closed trigger raised EBADF. stop() must still close everything, without error."""
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    server = ApiServer(app, 0, threads=1).start()
    assert httpx.get(server.url + "/", timeout=10).text == "ok"
    real_pull = server.server.trigger.pull_trigger
    pulls = []

    def pull_after_the_loop_ended(thunk):
        pulls.append(thunk)
        if len(pulls) == 2:  # the close: let the loop finish for real first, then fail as a closed fd does
            done = threading.Event()
            real_pull(lambda: (server._close_everything(), done.set()))
            done.wait(5)
            server._thread.join(5)
            raise OSError(9, "Bad file descriptor")
        real_pull(thunk)

    server.server.trigger.pull_trigger = pull_after_the_loop_ended
    server.stop()
    assert len(pulls) == 2 and not server.running and not server._thread.is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url + "/", timeout=2)


def test_the_running_server_keeps_its_local_token_from_a_revoke_by_another_token(live):
    spare = live.engine.create_token("laptop", "personal")
    with live.client(spare.secret) as api:
        r = api.post("/tokens/local/revoke")
        assert r.status_code == 403 and "is the local token" in r.json()["error"]
    with live.client() as api:
        assert api.get("/status").json()["token"]["name"] == "local"
