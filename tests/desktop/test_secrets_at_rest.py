"""No secret's value is in any file of the data dir, whatever path it came in by.

A session pastes every sentence of the secret corpus into a recall message and its context, a
session title and channel, a turn's texts and its tool, skill and recalled-id lists, an update,
an explicit memory, findings, a compaction summary, and an import (JSON Lines and Markdown), and
the Claude Code hook sees prompts and transcripts that hold them. Then every byte of every file
under the data dir (database, WAL, shared memory, server.json, the lock, the hook's state) is
searched for each secret, while the server runs and after it stopped.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from keepmind.desktop.cli import main as cli
from keepmind.engine.secretfilter import MARKER
from support.secret_corpus import leaks, secret_corpus

HOOK = Path(__file__).resolve().parents[2] / "packaging" / "agents" / "claude-code" / "keepmind_hook.py"


def run_hook(home: Path, action: str, event: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "KEEPMIND_HOME": str(home)}
    env.pop("KEEPMIND_BOUNDARY", None)
    result = subprocess.run([sys.executable, str(HOOK), action], input=json.dumps(event), capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result


def transcript(path: Path, sentence: str) -> str:
    entries = [
        {"type": "user", "message": {"role": "user", "content": f"Please deploy. {sentence}"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": f"I will not keep this: {sentence}"},
            {"type": "tool_use", "name": sentence.replace("\n", " ")[:300], "input": {}}]}},
    ]
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    return str(path)


def paste_through_the_api(api, doc_sid: str, doc: str, sentence: str) -> None:
    opened = api.post("/sessions", json={"audience": "personal", "boundary": "work", "title": sentence,
                                         "channel": sentence.replace("\n", " ")[:200]})
    assert opened.status_code == 200, opened.text
    sid = opened.json()["session"]["id"]
    calls = [
        ("turns", {"user": f"Remember {sentence}", "assistant": f"No: {sentence}", "tools": [sentence[:500]],
                   "skills": [sentence[:500]]}),
        ("recall", {"message": f"deploy with {sentence}", "context": f"earlier: {sentence}"}),
        ("tools/store_memory", {"title": "Credentials", "content": sentence}),
        ("findings", {"findings": [sentence]}),
        ("compaction", {"summary": f"We talked about {sentence}"}),
        ("end", {}),
    ]
    refused = api.post(f"/sessions/{sid}/turns", json={"user": "ok", "recalled_ids": [sentence[:500]]})
    assert refused.status_code == 400 and sentence[:500] not in refused.text  # not an id: refused, not echoed
    for route, body in calls:
        r = api.post(f"/sessions/{sid}/{route}", json=body)
        assert r.status_code == 200, (route, r.text)
    r = api.post(f"/sessions/{doc_sid}/tools/update_memory", json={"id": doc, "new_content": sentence})
    assert r.json()["result"]["action"] == "blocked"


def import_files(folder: Path, corpus) -> tuple[str, str]:
    folder.mkdir()
    rows = [{"type": "header", "format": "keepmind-export", "version": 1}]
    for n, (sentence, _) in enumerate(corpus):
        rows.append({"type": "anchor", "anchor_id": f"anc-{n:032x}", "anchor_type": "concept",
                     "canonical_name": sentence[:300], "normalized_name": "x", "audience": "personal",
                     "boundary": "work", "status": "active", "created_at": 1, "updated_at": 1})
    jsonl = folder / "export.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    markdown = folder / "MEMORY.md"
    markdown.write_text("# Memory\n\n" + "".join(f"- {s.replace(chr(10), ' ')}\n" for s, _ in corpus))
    return str(jsonl), str(markdown)


def test_a_session_that_pastes_secrets_everywhere_leaves_no_secret_in_any_file(tmp_path, clock, start_live, capsys):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"mcp": {"audience": "personal", "boundary": "work"}}))
    corpus = secret_corpus()
    cores = [core for _, core in corpus]
    live = start_live(home, clock=clock)
    try:
        doc_sid = live.engine.open_session("personal", "work")
        doc = live.engine.store(doc_sid, "Deploy", "The deploy runs from the release branch.").id
        with live.client() as api:
            for sentence, _ in corpus:
                paste_through_the_api(api, doc_sid, doc, sentence)
        for n, (sentence, _) in enumerate(corpus[::6]):
            claude = f"claude-{n}"
            run_hook(home, "prompt", {"session_id": claude, "cwd": str(tmp_path), "prompt": sentence})
            state = home / "hooks" / "claude-code" / f"{claude}.json"
            assert stat.S_IMODE(state.stat().st_mode) == 0o600
            assert set(json.loads(state.read_text())) <= {"session", "recalled_ids"}
            run_hook(home, "stop", {"session_id": claude, "transcript_path": transcript(tmp_path / "t.jsonl", sentence)})
        jsonl, markdown = import_files(tmp_path / "imports", corpus)
        for path in (jsonl, markdown):
            assert cli(["import", path, "--home", str(home), "--boundary", "work"]) == 1
        out = capsys.readouterr().out
        assert "holds secret-like content" in out and not [c for c in cores if c in out]
        assert leaks(cores, home) == []
        # what was redacted is still there, with the marker where the value was
        with live.engine.db.snapshot() as conn:
            titles = [r[0] for r in conn.execute("SELECT title FROM sessions WHERE channel != 'claude-code'")]
            queries = [r[0] for r in conn.execute("SELECT query FROM recall_events")]
            tools = [r[0] for r in conn.execute("SELECT tools_json FROM session_turns")]
        assert len(titles) == len(corpus) and all(MARKER in t for t in titles)
        assert len(queries) == len(corpus) + len(corpus[::6]) and all(MARKER in q for q in queries)
        assert all(MARKER in t for t in tools)
    finally:
        live.stop()
    assert leaks(cores, home) == []
