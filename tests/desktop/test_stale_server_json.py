"""A stale server.json never hands the token to whoever listens on its port now.

`keepmind serve` is killed (a crash: server.json stays behind), and another local program binds
the port it named. The Claude Code hook, `keepmind status` and the client the CLI and the MCP
adapter use all check the server first (POST /api/v1/hello: HMAC of a fresh challenge under
server.json's nonce) and never send it the token.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from keepmind.desktop.cli import main as cli
from keepmind.desktop.process.client import ApiError, DaemonClient, connect
from keepmind.desktop.process.files import read_server_json, write_server_json
from keepmind.webui.security import instance_proof

HOOK = Path(__file__).resolve().parents[2] / "packaging" / "agents" / "claude-code" / "keepmind_hook.py"
QUIET = {"memory.embeddings.auto_download": False, "memory.embeddings.enabled": False}


class Stranger:
    """Any program on the port: answers every request 200 with plausible JSON and keeps the
    Authorization headers it was sent."""

    def __init__(self, port: int):
        self.authorizations: list[str] = []
        self.paths: list[str] = []
        stranger = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                stranger.paths.append(self.path)
                if self.headers.get("Authorization"):
                    stranger.authorizations.append(self.headers["Authorization"])
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.dumps({"ok": True, "proof": "0" * 64, "service": "keepmind",
                                   "session": {"id": "ses-" + "0" * 32}, "items": [], "block": "[memory-recall]",
                                   "memory": {"status": "healthy", "reasons": []}, "version": "9"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def crashed(tmp_path):
    """A data dir whose `keepmind serve` was killed, and a stranger listening on its port."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps(QUIET))
    process = subprocess.Popen([sys.executable, "-m", "keepmind", "serve", "--home", str(home), "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    assert "serving on" in line, process.stderr.read()
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    info = read_server_json(home)
    assert info is not None and info["pid"] == process.pid  # left behind by the crash
    stranger = Stranger(int(info["url"].rsplit(":", 1)[1]))
    yield home, stranger
    stranger.stop()


def test_no_client_sends_the_token_to_a_stranger_on_a_stale_server_jsons_port(crashed, tmp_path, capsys):
    home, stranger = crashed
    env = {**os.environ, "KEEPMIND_HOME": str(home)}
    for action, event in (("prompt", {"session_id": "c", "cwd": str(tmp_path), "prompt": "my plans?"}),
                          ("stop", {"session_id": "c", "transcript_path": str(tmp_path / "none.jsonl")}),
                          ("end", {"session_id": "c"})):
        hook = subprocess.run([sys.executable, str(HOOK), action], input=json.dumps(event), env=env,
                              capture_output=True, text=True, timeout=60)
        assert hook.returncode == 0 and hook.stdout == ""  # nothing from the stranger reaches Claude
    assert "not this data dir's Keepmind" in hook.stderr
    assert cli(["status", "--home", str(home)]) == 3
    out = capsys.readouterr().out
    assert "no Keepmind is running" in out and "not this data dir's Keepmind" in out
    assert DaemonClient.from_home(home) is None
    with pytest.raises(ApiError, match="not running"):
        connect(home, start=False)
    assert stranger.paths and set(stranger.paths) == {"/api/v1/hello"}
    assert stranger.authorizations == []


def test_the_real_server_proves_itself_and_a_wrong_pid_or_nonce_is_refused(live):
    home = live.daemon.home
    info = read_server_json(home)
    challenge = "c" * 40
    answer = httpx.post(live.url + "/api/v1/hello", json={"challenge": challenge}).json()
    assert answer == {"ok": True, "service": "keepmind", "proof": instance_proof(info["nonce"], challenge)}
    client = DaemonClient.from_home(home)
    assert client is not None and client.get("/status")["ok"] is True
    client.close()
    write_server_json(home, info["url"], info["pid"], "a-nonce-from-an-earlier-start")
    assert DaemonClient.from_home(home) is None
    write_server_json(home, info["url"], info["pid"] + 1, info["nonce"])  # the lock holds another pid
    assert DaemonClient.from_home(home) is None
    write_server_json(home, info["url"], info["pid"], info["nonce"])
    client = DaemonClient.from_home(home)
    assert client is not None
    client.close()


def test_a_crash_with_nothing_on_its_port_is_said_as_a_crash(crashed, capsys):
    home, stranger = crashed
    stranger.stop()  # nothing listens there any more: the plain kill -9
    assert cli(["status", "--home", str(home)]) == 3
    out = capsys.readouterr().out
    assert "nothing answers there: Keepmind stopped without cleaning up" in out
    assert "not this data dir's Keepmind" not in out
