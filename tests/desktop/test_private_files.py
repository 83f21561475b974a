"""The data dir is 0700 and every file in it 0600, SQLite's -wal and -shm included; an existing
wide dir is repaired at start, and `keepmind doctor` says when a file was or is readable by others."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from keepmind.desktop.cli import main as cli
from keepmind.desktop.process.client import start_background
from keepmind.engine import open_engine
from support.files import healthy_client

HOOK = Path(__file__).resolve().parents[2] / "packaging" / "agents" / "claude-code" / "keepmind_hook.py"
QUIET = {"memory.embeddings.auto_download": False, "memory.embeddings.enabled": False}
SERVED = {**QUIET, "server.port": 0}  # a free port: a Keepmind of the user (or another test) may hold 8765


def modes(home: Path) -> dict[str, str]:
    """Every dir and file under `home` (and `home` itself as '.') with its permission bits."""
    out = {".": oct(stat.S_IMODE(home.stat().st_mode))}
    for path in sorted(home.rglob("*")):
        out[path.relative_to(home).as_posix()] = oct(stat.S_IMODE(path.lstat().st_mode))
    return out


def wider_than_owner(found: dict[str, str]) -> dict[str, str]:
    return {name: mode for name, mode in found.items() if int(mode, 8) & 0o077}


@pytest.fixture
def served(tmp_path):
    """`keepmind serve` started the way the MCP adapter starts it (logging to logs/serve.log)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    (home / "keepmind.json").write_text(json.dumps(SERVED))
    process = start_background(home).process
    client = healthy_client(home, process)
    assert client is not None, (home / "logs" / "serve.log").read_text()
    yield home, client
    client.close()
    process.terminate()
    process.wait(timeout=60)


def test_a_running_keepmind_keeps_its_data_dir_and_every_file_owner_only(served, tmp_path):
    home, client = served
    sid = client.post("/sessions", {"audience": "personal", "boundary": "work", "title": "t"})["session"]["id"]
    client.post(f"/sessions/{sid}/turns", {"user": "I drink oat milk.", "assistant": "Noted."})
    client.post(f"/sessions/{sid}/tools/store_memory", {"content": "The user drinks oat milk."})
    env = {**os.environ, "KEEPMIND_HOME": str(home)}
    hook = subprocess.run([sys.executable, str(HOOK), "prompt"], env=env, capture_output=True, text=True, timeout=60,
                          input=json.dumps({"session_id": "c1", "cwd": str(tmp_path), "prompt": "milk?"}))
    assert hook.returncode == 0 and hook.stderr == "", hook.stderr
    export, markdown = tmp_path / "out" / "all.jsonl", tmp_path / "out" / "md"
    assert cli(["export", "--home", str(home), "-o", str(export)]) == 0
    assert cli(["export", "--home", str(home), "--format", "markdown", "-o", str(markdown)]) == 0
    found = modes(home)
    for name in ("keepmind.db", "keepmind.db-wal", "keepmind.db-shm", "token", "server.json", "keepmind.lock",
                 "logs/serve.log", "hooks/claude-code/c1.json", "hooks/claude-code/recalls.jsonl"):
        assert found.get(name) == "0o600", (name, found)
    assert found["."] == found["logs"] == found["hooks"] == "0o700"
    assert wider_than_owner(found) == {}
    assert stat.S_IMODE(export.stat().st_mode) == 0o600
    assert wider_than_owner(modes(markdown)) == {} and len(modes(markdown)) > 1


def test_a_wide_data_dir_is_repaired_at_start_and_doctor_says_it_was(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps(QUIET))
    engine = open_engine(home, start_workers=False)
    engine.store(engine.open_session("personal", "work"), "Milk", "The user drinks oat milk.")
    (home / "token").write_text("km_not-a-real-token\n")
    (home / "logs").mkdir()
    (home / "logs" / "serve.log").write_text("log line\n")
    for path in [home, home / "logs"]:
        path.chmod(0o755)
    for path in [p for p in home.rglob("*") if p.is_file()]:
        path.chmod(0o644)
    assert wider_than_owner(modes(home))
    engine.close()
    assert cli(["doctor", "--home", str(home)]) == 1
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "Data dir permissions" in line)
    assert line.startswith("[WARN]") and "were readable by other users" in line
    assert "token" in line and "keepmind.db" in line and "made them owner-only" in line
    assert wider_than_owner(modes(home)) == {}
    assert cli(["doctor", "--home", str(home), "--json"]) in (0, 1)
    [check] = [c for c in json.loads(capsys.readouterr().out) if c["name"] == "Data dir permissions"]
    assert check["level"] == "pass" and "owner-only" in check["message"]


def test_reading_a_data_dir_takes_only_what_others_may_do_never_gives_its_owner_more(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps(QUIET))
    engine = open_engine(home, start_workers=False)
    engine.store(engine.open_session("personal", "work"), "Milk", "The user drinks oat milk.")
    engine.close()
    (home / "keepmind.json").chmod(0o444)  # made read-only by hand, readable by all
    home.chmod(0o555)
    try:
        for command in (["status"], ["stats"]):
            cli([*command, "--home", str(home)])
        capsys.readouterr()
        assert oct(stat.S_IMODE(home.stat().st_mode)) == "0o500"  # was set to 0o700: writable again
    finally:
        home.chmod(0o700)
    engine = open_engine(home, start_workers=False)  # the start-up repair narrows the same way
    engine.close()
    assert oct(stat.S_IMODE((home / "keepmind.json").stat().st_mode)) == "0o400"


def test_doctor_names_a_file_made_readable_while_keepmind_runs_and_the_remedy(live):
    home = live.daemon.home
    assert [c.level for c in live.engine.doctor() if c.name == "Data dir permissions"] == ["pass"]
    (home / "token").chmod(0o644)
    [check] = [c for c in live.engine.doctor() if c.name == "Data dir permissions"]
    assert check.level == "warning"
    assert check.message == (f"other users can read token in {home}: run `chmod -R go-rwx {home}` "
                             "(or restart Keepmind, which repairs the modes)")
