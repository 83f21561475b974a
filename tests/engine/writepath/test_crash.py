"""Crash safety: the curation worker process is SIGKILLed 20 times while curating.

200 checkpoints (new facts, additions to living documents, a few malformed ones) are queued; a
child process curates them and is killed at a random step of its narration, then restarted.
Afterwards every checkpoint is completed or dead-lettered with a reason, and nothing was lost or
applied twice (memories, revisions and curation events are counted).
"""

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

from keepmind.engine import open_engine
from keepmind.engine.db import rows, scalar
from keepmind.engine.settings import defaults
from support.provider import llm_settings

CHILD = Path(__file__).with_name("crash_worker.py")
KILLS = 20


def _start(home):
    return subprocess.Popen([sys.executable, str(CHILD), str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=Path(__file__).parents[3])


def test_sigkilled_worker_loses_nothing_and_applies_nothing_twice(tmp_path, provider):
    home = tmp_path / "crash-home"
    settings = llm_settings(provider, memory__embeddings__enabled=False)
    provider.default = "CREATE"  # for a same-anchor proposal this becomes a non-destructive append
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({k: v for k, v in settings.values.items()
                                                    if v != defaults().values[k]}))
    engine = open_engine(home, settings=settings, start_workers=False)
    session = engine.open_session("personal", "work")
    facts, appends = [], {}
    for i in range(160):
        text = f"Fact {i}: service-{i} runs on host h{i:03d}.example with {i * 7} workers."
        facts.append(text)
        engine.store_memory(session, f"Service {i}", text)
    for i in range(36):
        title = f"Weekly status {i % 6}"
        text = f"Week {i}: milestone m{i} shipped with {i * 3} closed issues."
        appends.setdefault(title, []).append(text)
        engine.store_memory(session, title, text)
    for i in range(4):
        engine.write(lambda conn, i=i: conn.execute(
            "INSERT INTO memory_checkpoints(checkpoint_id, trigger_type, priority, payload_json, audience,"
            " boundary, available_at, created_at, updated_at) VALUES (?, 'explicit-memory-request', 100,"
            " '{broken', 'personal', 'work', 0, 0, 0)", (f"cp-broken{i}",)))
    assert engine.checkpoint_overview()["counts"]["pending"] == 200
    engine.close()

    rng = random.Random(5)
    kills = 0
    while kills < KILLS:
        child = _start(home)
        target = rng.randint(1, 24)  # lines: leased, planned, applying, done per checkpoint
        seen, finished = 0, False
        for line in child.stdout:
            seen += 1
            if line.strip() == "idle":
                finished = True
                break
            if line.strip() in ("leased", "planned", "applying"):  # the child waits for a go-ahead here
                if seen >= target:  # mid-curation: killed while it waits inside the step
                    child.send_signal(signal.SIGKILL)
                    kills += 1
                    break
                child.stdin.write("go\n")
                child.stdin.flush()
        child.wait()
        child.stdout.close()
        try:
            child.stdin.close()
        except BrokenPipeError:
            pass
        assert not finished, "the queue drained before all 20 kills: too little work per run"
    final = _start(home)
    out, _ = final.communicate(timeout=120)
    assert final.returncode == 0 and out.strip().endswith("idle")

    engine = open_engine(home, settings=settings, start_workers=False)
    try:
        with engine.db.snapshot() as conn:
            assert scalar(conn, "PRAGMA integrity_check") == "ok"
            cps = rows(conn, "SELECT * FROM memory_checkpoints")
            events = rows(conn, "SELECT checkpoint_id, action FROM curation_events")
            docs = rows(conn, "SELECT document_id, title, body, revision FROM memory_documents")
            revisions = dict(conn.execute("SELECT document_id, COUNT(*) FROM memory_revisions GROUP BY 1"))
    finally:
        engine.close()
    assert len(cps) == 200
    assert {c["status"] for c in cps} <= {"completed", "dead"}
    dead = [c for c in cps if c["status"] == "dead"]
    assert all(c["last_error"] for c in dead)
    assert {c["checkpoint_id"] for c in dead} >= {f"cp-broken{i}" for i in range(4)}
    decisions = [e for e in events if e["action"] != "dead_letter"]
    per_cp = {}
    for e in decisions:
        per_cp[e["checkpoint_id"]] = per_cp.get(e["checkpoint_id"], 0) + 1
    completed = {c["checkpoint_id"] for c in cps if c["status"] == "completed"}
    assert set(per_cp) == completed and set(per_cp.values()) == {1}  # one decision each, never two
    assert len([e for e in events if e["action"] == "dead_letter"]) == len(dead)
    bodies = "\n".join(d["body"] for d in docs)
    lost_or_twice = [t for t in facts + sum(appends.values(), []) if bodies.count(t) != 1]
    dead_texts = []
    for c in dead:
        try:
            dead_texts.append(json.loads(c["payload_json"])["proposal"]["content"])
        except ValueError:
            pass
    assert sorted(lost_or_twice) == sorted(dead_texts)  # only dead letters are absent, nothing doubled
    by_title = {d["title"]: d for d in docs}
    for title, texts in appends.items():
        doc = by_title[title]
        applied = sum(1 for t in texts if t in doc["body"])
        assert doc["revision"] == applied == revisions[doc["document_id"]]
    creates = sum(1 for e in decisions if e["action"] == "create")
    assert creates == len(docs)
    # the kills landed mid-curation: leases of killed workers were reclaimed on restart
    interrupted = [c for c in cps if "gone (crash)" in (c["last_error"] or "")]
    print(f"dead letters: {len(dead)} (4 malformed), kills: {KILLS}, interrupted: {len(interrupted)}")
    assert len(interrupted) >= KILLS * 3 // 4  # a checkpoint killed twice counts once
