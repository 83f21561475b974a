"""`keepmind serve` as a real process: signals shut it down in order; `token` and `status` commands."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from keepmind.desktop.cli import main
from keepmind.desktop.process.files import read_server_json

QUIET = {"memory.embeddings.auto_download": False, "memory.embeddings.enabled": False}


def prepared_home(tmp_path: Path, **settings) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({**QUIET, **settings}))
    return home


def start_serve(home: Path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "keepmind", "serve", "--home", str(home), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()  # blocks until the server is up (or the process died)
    if "serving on" not in line:
        process.kill()
        raise AssertionError(f"serve did not start: {line!r} {process.stderr.read()}")
    return process, line.split("serving on ", 1)[1].split()[0]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_then_stops_cleanly_on_a_signal(tmp_path, signum, start_live):
    home = prepared_home(tmp_path)
    process, url = start_serve(home)
    try:
        info = read_server_json(home)
        assert info == {"url": url, "pid": process.pid, "nonce": info["nonce"]} and len(info["nonce"]) >= 40
        token = (home / "token").read_text().strip()
        assert stat.S_IMODE((home / "token").stat().st_mode) == 0o600
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as http:
            assert http.get("/api/v1/status").json()["memory"]["status"] in ("healthy", "degraded")
            sid = http.post("/api/v1/sessions", json={"audience": "personal", "boundary": "w"}).json()["session"]["id"]
            assert http.post(f"/api/v1/sessions/{sid}/turns", json={"user": "hello"}).json()["turn"] == 1
            process.send_signal(signum)
            out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "keepmind stopped" in out
    assert not (home / "server.json").exists()
    log = (home / "logs" / "keepmind.log").read_text()  # the named events, in the data dir's log file
    assert "keepmind_serving url=" in log and "keepmind_stopped" in log and "memory_" not in err
    assert not (home / "keepmind.db-wal").exists() or (home / "keepmind.db-wal").stat().st_size == 0
    # the turn was committed before the acknowledgement and survives the restart
    live = start_live(home)
    try:
        with live.engine.db.snapshot() as conn:
            assert conn.execute("SELECT user_text FROM session_turns").fetchall() == [("hello",)]
    finally:
        live.stop()


def test_a_second_serve_on_the_same_home_is_refused(tmp_path):
    home = prepared_home(tmp_path)
    process, url = start_serve(home)
    try:
        second = subprocess.run([sys.executable, "-m", "keepmind", "serve", "--home", str(home), "--port", "0"],
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert "already running" in second.stderr and url in second.stderr
        assert read_server_json(home)["pid"] == process.pid
    finally:
        process.terminate()
        process.communicate(timeout=60)


def test_token_commands(tmp_path, capsys):
    deep = tmp_path / "a" / "b" / "c"
    assert main(["token", "show", "--home", str(deep)]) == 2  # a typo never becomes a new store
    assert "no Keepmind data dir" in capsys.readouterr().err and not (tmp_path / "a").exists()
    (tmp_path / "home").mkdir()
    home = str(tmp_path / "home")
    assert main(["token", "show", "--home", home]) == 0
    local = capsys.readouterr().out.strip()
    assert local.startswith("km_")
    assert main(["token", "show", "--home", home]) == 0
    assert capsys.readouterr().out.strip() == local  # created once, then shown
    assert main(["token", "create", "claude-code", "--ceiling", "team", "--boundary", "work", "--home", home]) == 0
    captured = capsys.readouterr()
    secret = captured.out.strip()
    assert secret.startswith("km_") and secret != local and "shown only now" in captured.err
    assert main(["token", "list", "--home", home]) == 0
    listing = capsys.readouterr().out
    assert "claude-code" in listing and "ceiling=team" in listing and "boundaries=work" in listing
    assert secret not in listing and local not in listing
    assert main(["token", "revoke", "claude-code", "--home", home]) == 0
    capsys.readouterr()
    main(["token", "list", "--home", home])
    assert "claude-code" not in capsys.readouterr().out
    main(["token", "list", "--all", "--home", home])
    assert "revoked" in capsys.readouterr().out
    assert main(["token", "revoke", "nobody", "--home", home]) == 2
    assert "no token 'nobody'" in capsys.readouterr().err


def test_status_command_running_and_not(tmp_path, capsys, clock, start_live):
    home = tmp_path / "home"
    assert main(["status", "--home", str(tmp_path / "keepmnid")]) == 2  # a typo: refused, not "healthy"
    assert "no Keepmind data dir" in capsys.readouterr().err
    home.mkdir()
    assert main(["status", "--home", str(home)]) == 3  # nothing runs: no health to claim
    out = capsys.readouterr().out
    assert f"no Keepmind is running for {home}" in out and "0 documents" in out and "healthy" not in out
    live = start_live(home, clock=clock)
    try:
        assert main(["status", "--json", "--home", str(home)]) == 0
        status = json.loads(capsys.readouterr().out)
        assert status["server"] == {"running": True, "url": live.url, "pid": os.getpid(), "idle_stop_minutes": None}
        assert status["memory"]["status"] == "healthy"
    finally:
        live.stop()


def test_serve_hands_the_provider_key_from_the_named_variable_to_the_write_path(tmp_path, monkeypatch):
    """Only the composition root reads the environment: serve reads the key, the engine receives it."""
    import json as _json

    from keepmind.desktop.cli import main
    from keepmind.desktop.process import daemon as server

    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(_json.dumps({
        "memory.llm.base_url": "http://127.0.0.1:9/v1", "memory.llm.model": "m",
        "memory.llm.api_key_env": "KEEPMIND_TEST_PROVIDER_KEY"}))
    monkeypatch.setenv("KEEPMIND_TEST_PROVIDER_KEY", "sk-test-value")
    seen = {}

    class Probe(server.Daemon):
        def start(self):
            super().start()
            seen["key"] = self.engine.writepath.llm.config.api_key
            raise KeyboardInterrupt  # stop right after start

    monkeypatch.setattr(server, "Daemon", Probe)
    assert main(["serve", "--home", str(home), "--port", "0"]) == 130
    assert seen["key"] == "sk-test-value"
    assert not (home / "server.json").exists()
