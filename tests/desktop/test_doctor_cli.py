"""`keepmind doctor` adds the desktop's check (does the server answer?) and says where the logs are."""

from __future__ import annotations

import json
import os
import socket

from keepmind.desktop.cli import main
from keepmind.desktop.process.files import write_server_json, write_token_file
from keepmind.desktop.process.health import check_server, check_server_of


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_that_does_not_answer_is_an_error_that_says_to_restart_it(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    url = f"http://127.0.0.1:{_closed_port()}"
    write_token_file(home, "not-a-real-token")
    write_server_json(home, url, os.getpid(), "n" * 32)  # a live process that serves nothing: a hung Keepmind
    check = check_server_of(home, timeout=1.0)
    assert check.level == "error" and f"Keepmind at {url} (pid {os.getpid()}) does not answer" in check.message
    assert "start it again with `keepmind`" in check.message and "keepmind.log" in check.message
    gone = check_server(url, "x", pid=2**22 + 12345, timeout=1.0)  # above Linux's pid_max: never a process
    assert gone.level == "error" and "is gone" in gone.message and "start it again with `keepmind`" in gone.message


def test_a_running_server_passes_and_none_running_is_not_a_problem(tmp_path, live):
    assert check_server_of(tmp_path / "nothing-here").level == "pass"
    check = check_server_of(live.daemon.home)
    assert check.level == "pass" and check.message == f"answering at {live.url}"


def test_doctor_prints_every_check_with_the_server_and_the_log_file(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"memory.embeddings.enabled": False}))
    (home / "keepmind.json").chmod(0o600)  # owner-only, as Keepmind keeps it (else doctor warns, rightly)
    code = main(["doctor", "--home", str(home)])
    out = capsys.readouterr().out
    assert "[ok  ] Database: integrity ok" in out and "[ok  ] Server: not running" in out
    assert "logs: none yet (Keepmind has not run for this data dir)" in out  # no file it could open
    assert code == 0, out
    (home / "logs").mkdir()
    (home / "logs" / "keepmind.log").write_text("started\n")
    main(["doctor", "--home", str(home)])
    assert f"logs: {home / 'logs' / 'keepmind.log'}" in capsys.readouterr().out


def test_a_program_on_a_stale_server_json_port_is_never_sent_the_token(tmp_path):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen = []

    class Impostor(BaseHTTPRequestHandler):
        def _answer(self):
            seen.append((self.path, self.headers.get("Authorization")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"ok": true, "proof": "0000"}')

        do_GET = do_POST = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Impostor)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        home = tmp_path / "home"
        home.mkdir()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        write_token_file(home, "the-real-secret")
        write_server_json(home, url, 2**22 + 12345, "n" * 32)  # Keepmind crashed; its port is someone else's now
        check = check_server_of(home, timeout=1.0)
    finally:
        server.shutdown()
        server.server_close()
    assert check.level == "error" and "not as the Keepmind that wrote server.json" in check.message
    assert "no token was sent" in check.message
    assert seen and all(auth is None for _, auth in seen)  # it was asked for its proof, and nothing more


def test_doctor_reads_the_llm_key_from_the_variable_the_settings_name(tmp_path, capsys, monkeypatch):
    """A walk: with the variable set, `keepmind doctor` still said "memory.llm.api_key_env names
    FAKE_LLM_KEY, but that environment variable is not set for Keepmind" (it opened the store without it)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({
        "memory.embeddings.enabled": False, "memory.llm.base_url": "http://127.0.0.1:9/v1",
        "memory.llm.model": "fake-1", "memory.llm.api_key_env": "FAKE_LLM_KEY"}))
    (home / "keepmind.json").chmod(0o600)
    monkeypatch.delenv("FAKE_LLM_KEY", raising=False)
    main(["doctor", "--home", str(home)])
    assert "that environment variable is not set" in capsys.readouterr().out  # unset: said
    monkeypatch.setenv("FAKE_LLM_KEY", "test-key-not-secret")
    main(["doctor", "--home", str(home)])
    out = capsys.readouterr().out
    assert "not set" not in out and "[ok  ] Curation LLM: fake-1 at http://127.0.0.1:9/v1" in out
