"""`keepmind import` of OpenClaw-style Markdown: by meaning, into the agents' scope, curated like
everything else with a summary of what was kept and skipped and why, and embedded (by this
process, or by the running Keepmind within seconds), then found through the API and over MCP."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import string
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from keepmind.desktop.cli import main as cli
from keepmind.desktop.process.files import read_server_json
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults

DATA = Path(__file__).resolve().parents[1] / "data"
QUIET = {"memory.embeddings.auto_download": False}


def import_json(capsys, *argv) -> dict:
    assert cli(["import", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def stored(home: Path) -> list[dict]:
    with open_engine(home, settings=defaults().with_overrides(memory__embeddings__enabled=False),
                     start_workers=False) as eng:
        return [i.as_dict() for i in eng.list_memories(eng.scope(eng.open_session("personal", "work")), limit=500)]


def vectors(home: Path) -> set[str]:
    with sqlite3.connect(f"file:{home / 'keepmind.db'}?mode=ro", uri=True) as db:
        return {r[0] for r in db.execute("SELECT item_id FROM memory_embeddings")}


@pytest.mark.offline_model
@pytest.mark.parametrize("workspace, units, kept, skipped, left_out", [
    ("openclaw-zh", 34, 31, {"already stored": 1, "already said by another memory": 1, "too slight to keep": 1}, 7),
    ("openclaw-en", 16, 14, {"already stored": 1, "already said by another memory": 1}, 6),
])
def test_an_openclaw_workspace_imports_by_meaning_into_the_agents_scope(offline_models_home, capsys, workspace,
                                                                        units, kept, skipped, left_out):
    home = offline_models_home
    (home / "keepmind.json").write_text(json.dumps({**QUIET, "mcp": {"boundary": "work"}}))
    report = import_json(capsys, str(DATA / workspace), "--home", str(home))
    assert report["scope"] == {"audience": "personal", "boundary": "work"}  # where the hook and MCP look
    assert report["queued"] == units and len(report["not_memories"]) == left_out
    assert report["outcome"]["counts"]["kept"] == kept and report["outcome"]["skipped_reasons"] == skipped
    assert report["embeddings"] == f"embedded {kept} memories with all-minilm-l6-v2"
    memories = stored(home)
    assert len(memories) == kept and {m["id"] for m in memories} <= vectors(home)
    titles = [m["title"] for m in memories]
    assert len(set(titles)) == len(titles)  # each titled from its own text
    assert not [t for t in titles if t[:4].isdigit()]  # no "2026-02-11: ..." titles
    assert not [m for m in memories if m["content"].rstrip().endswith((":", "："))]  # no bare label alone
    again = import_json(capsys, str(DATA / workspace), "--home", str(home))
    assert again["outcome"]["counts"]["kept"] == 0 and len(stored(home)) == kept


def test_markdown_goes_to_the_options_scope_else_the_mcp_settings(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"memory.embeddings.enabled": False,
                                                    "mcp": {"audience": "team", "boundary": "acme"}}))
    notes = tmp_path / "notes.md"
    notes.write_text("## Deploys\n- Deploys go out on Tuesdays\n")
    assert import_json(capsys, str(notes), "--home", str(home))["scope"] == {"audience": "team", "boundary": "acme"}
    notes.write_text("## Deploys\n- Releases are tagged by the release bot\n")
    given = import_json(capsys, str(notes), "--home", str(home), "--audience", "personal", "--boundary", "side")
    assert given["scope"] == {"audience": "personal", "boundary": "side"}
    assert "embeddings are off" in given["embeddings"]
    with open_engine(home, start_workers=False) as eng:
        scopes = {(i.audience, i.boundary) for i in eng.list_memories(eng.scope(eng.open_session("personal", "side")))}
        team = {(i.audience, i.boundary) for i in eng.list_memories(eng.scope(eng.open_session("team", "acme")))}
    assert scopes == {("personal", "side")} and team == {("team", "acme")}


def test_a_markdown_file_with_a_secret_imports_nothing_and_names_the_line(tmp_path, capsys):
    home = tmp_path / "home"
    notes = tmp_path / "MEMORY.md"
    key = "AKIA" + "".join(random.Random(7).choice(string.ascii_uppercase + string.digits) for _ in range(16))
    notes.write_text(f"## Keys\n- The deploy key is {key}\n- Deploys go out on Tuesdays\n")
    assert cli(["import", str(notes), "--home", str(home)]) == 1
    out = capsys.readouterr().out
    assert "nothing was imported" in out and "MEMORY.md line 2" in out and "AKIA" not in out
    assert stored(home) == []


@pytest.mark.offline_model
def test_a_running_keepmind_curates_and_embeds_imports_within_seconds_and_agents_find_them(
        offline_models_home, tmp_path, capsys):
    home = offline_models_home
    (home / "keepmind.json").write_text(json.dumps({**QUIET, "server.port": 0, "mcp": {"boundary": "work"}}))
    serve = subprocess.Popen([sys.executable, "-m", "keepmind", "serve", "--home", str(home)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "serving on" in serve.stdout.readline()
        # Markdown: the server's curation worker takes the units and embeds what it keeps
        report = import_json(capsys, str(DATA / "openclaw-en"), "--home", str(home))
        assert report["outcome"]["counts"]["kept"] == 14
        assert report["embeddings"].startswith("the Keepmind at http://127.0.0.1:")
        assert {m["id"] for m in stored(home)} <= vectors(home)
        # JSON Lines from another store: rows written by this process; the server notices them
        other = tmp_path / "other"
        with open_engine(other, settings=defaults().with_overrides(memory__embeddings__enabled=False),
                         start_workers=False) as eng:
            sid = eng.open_session("personal", "work")
            ids = [eng.store(sid, f"Fact {n}", f"The user keeps bees, hive number {n}.").id for n in range(5)]
        shutil.copy(other / "keepmind.db", tmp_path / "x.db")
        assert cli(["export", "--home", str(other), "-o", str(tmp_path / "other.jsonl")]) == 0
        capsys.readouterr()
        rows = import_json(capsys, str(tmp_path / "other.jsonl"), "--home", str(home))
        assert rows["imported"] == 5 and "embeds them within seconds" in rows["embeddings"]
        began = time.monotonic()
        while not set(ids) <= vectors(home) and time.monotonic() - began < 20:
            time.sleep(0.2)
        assert set(ids) <= vectors(home), "the running Keepmind did not embed the imported rows"
        embedded_after = time.monotonic() - began
        params = StdioServerParameters(command=sys.executable, args=["-m", "keepmind", "mcp", "--home", str(home)],
                                       env={**os.environ, "HF_HUB_OFFLINE": "1"})

        async def find():
            async with Client(params, read_timeout_seconds=60) as client:
                return [await client.call_tool("find_memories", {"query": q}) for q in ("Postgres cluster", "bees")]

        postgres, bees = anyio.run(find)
        assert any("Priya" in i["content"] for i in postgres.structured_content["items"])
        assert bees.structured_content["count"] == 5
    finally:
        serve.terminate()
        serve.communicate(timeout=60)
    assert read_server_json(home) is None
    assert embedded_after < 10


def _forget_vectors(home: Path) -> None:
    """What an import stopped after writing its memories and before embedding them leaves."""
    with sqlite3.connect(home / "keepmind.db") as db:
        db.execute("DELETE FROM memory_embeddings")


@pytest.mark.offline_model
def test_importing_again_after_an_import_stopped_before_embedding_embeds_what_it_left(
        offline_models_home, tmp_path, capsys):
    home = offline_models_home
    (home / "keepmind.json").write_text(json.dumps({**QUIET, "mcp": {"boundary": "work"}}))
    first = import_json(capsys, str(DATA / "openclaw-en"), "--home", str(home))
    kept = first["outcome"]["counts"]["kept"]
    _forget_vectors(home)
    again = import_json(capsys, str(DATA / "openclaw-en"), "--home", str(home))
    assert again["outcome"]["counts"]["kept"] == 0
    assert again["embeddings"] == (f"embedded {kept} memories that had no vector yet (an earlier import stopped "
                                   "before embedding them) with all-minilm-l6-v2")
    assert {m["id"] for m in stored(home)} <= vectors(home)
    # a JSON Lines file said again (every row skipped as present) does the same
    export = tmp_path / "export.jsonl"
    assert cli(["export", "--home", str(home), "-o", str(export)]) == 0
    capsys.readouterr()
    _forget_vectors(home)
    rows = import_json(capsys, str(export), "--home", str(home))
    assert rows["imported"] == 0 and rows["skipped"] >= kept and "that had no vector yet" in rows["embeddings"]
    assert {m["id"] for m in stored(home)} <= vectors(home)
    quiet = import_json(capsys, str(export), "--home", str(home))
    assert quiet["embeddings"] == ""  # nothing lacked a vector: nothing is said
