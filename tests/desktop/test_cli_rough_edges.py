"""The CLI's rough edges a newcomer hit: a version, listings of memories and sessions, a pipe
closed early, doctor that never downloads, and a store_memory answer that leads to the memory."""

from __future__ import annotations

import json
import subprocess
import sys

from keepmind.desktop.cli import main
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults


def test_version_is_printed(capsys):
    try:
        main(["--version"])
    except SystemExit as done:
        assert done.code == 0
    assert capsys.readouterr().out.startswith("keepmind ")


def test_memories_and_sessions_can_be_listed_and_shown(tmp_path, capsys):
    home = tmp_path / "home"
    with open_engine(home, settings=defaults(), start_workers=False) as eng:
        sid = eng.open_session("personal", "work", title="planning")
        first = eng.store(sid, "Airline", "The user flies with KLM.").id
        eng.update(sid, first, old_text="KLM", new_text="Lufthansa")
        eng.store(eng.open_session("team", "oss"), "Release", "Releases happen on Fridays.")
    assert main(["memories", "list", "--home", str(home)]) == 0
    listing = capsys.readouterr().out
    assert first in listing and "personal/work" in listing and "team/oss" in listing
    assert main(["memories", "list", "--query", "Lufthansa", "--home", str(home), "--json"]) == 0
    found = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [f["id"] for f in found] == [first]
    assert main(["memories", "show", first, "--home", str(home)]) == 0
    shown = capsys.readouterr().out
    assert "The user flies with Lufthansa." in shown and "2 revisions" in shown
    assert main(["memories", "show", "doc-" + "0" * 32, "--home", str(home)]) == 2
    assert main(["sessions", "list", "--home", str(home)]) == 0
    sessions = capsys.readouterr().out
    assert "planning" in sessions and "memories=1" in sessions


def test_a_closed_pipe_ends_quietly(tmp_path):
    home = tmp_path / "home"
    with open_engine(home, settings=defaults(), start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        for n in range(300):
            eng.store(sid, "", f"Fact number {n} about the user's garden.")
    proc = subprocess.run(f"{sys.executable} -m keepmind memories list --limit 300 --home {home} | head -1",
                          shell=True, capture_output=True, text=True, timeout=60)
    assert proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_doctor_never_downloads_and_reports_what_it_found(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"memory.embeddings.auto_download": True}))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # any hub call would fail loudly
    code = main(["doctor", "--home", str(home)])
    out, err = capsys.readouterr()
    assert code in (1, 2)  # no model installed: a warning or an error, said as such
    assert "downloading" not in out and "download of" not in out
    assert "Embeddings" in out and err == ""


def test_store_memory_leads_to_the_memory_it_formed(live, api):
    sid = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["session"]["id"]
    queued = api.post(f"/sessions/{sid}/tools/store_memory",
                      json={"title": "Editor", "content": "The user writes code in Helix."}).json()["result"]
    assert queued["action"] == "queued" and queued["id"] is None and queued["checkpoint_id"]
    before = api.get(f"/checkpoints/{queued['checkpoint_id']}").json()["checkpoint"]
    assert before["status"] == "pending" and before["memory_ids"] == []
    live.engine.drain_checkpoints()
    after = api.get(f"/checkpoints/{queued['checkpoint_id']}").json()["checkpoint"]
    assert after["status"] == "completed" and after["action"] == "create"
    (memory_id,) = after["memory_ids"]
    got = api.post(f"/sessions/{sid}/tools/get_memories", json={"ids": [memory_id]}).json()
    assert got["items"][0]["content"] == "The user writes code in Helix."


def test_mcp_print_config_names_the_command_by_absolute_path(tmp_path, capsys):
    (tmp_path / "h").mkdir()
    assert main(["mcp", "--print-config", "--boundary", "myproject", "--home", str(tmp_path / "h")]) == 0
    entry = json.loads(capsys.readouterr().out)["mcpServers"]["keepmind"]
    assert entry["command"].startswith("/")
    run = [entry["command"], *entry["args"][:entry["args"].index("mcp")], "--version"]  # the same program
    assert subprocess.run(run, capture_output=True, text=True, timeout=60).stdout.startswith("keepmind ")
    assert entry["args"][-2:] == ["--boundary", "myproject"] and str(tmp_path / "h") in entry["args"]
    assert not any((tmp_path / "h").iterdir())  # printing the config writes nothing


def test_stats_counts_formed_since_the_server_started_not_since_the_cli_did(tmp_path, capsys, start_live):
    live = start_live(tmp_path / "home")
    try:
        live.engine.store(live.engine.open_session("personal", "work"), "Tea", "The user drinks green tea.")
        assert main(["stats", "--json", "--home", str(tmp_path / "home")]) == 0
        stats = json.loads(capsys.readouterr().out)
        assert stats["formed_since_start"] == 1 and stats["documents"] == 1 and stats["running"] == live.url
    finally:
        live.stop()
    assert main(["stats", "--home", str(tmp_path / "home")]) == 0
    out = capsys.readouterr().out
    assert "documents: 1" in out and "formed since start" not in out and "no Keepmind is running" in out
