"""Crash safety and migrations: a SIGKILL mid-burst loses no acknowledged write."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from keepmind.engine import open_engine
from keepmind.engine.db import Database, connect, scalar
from keepmind.engine.migrations import MIGRATIONS, migrate
from keepmind.engine.settings import defaults

WRITER = textwrap.dedent(
    """
    import sys, threading
    from keepmind.engine import open_engine
    from keepmind.engine.settings import defaults
    eng = open_engine(sys.argv[1], settings=defaults(), start_workers=False)
    sid = eng.open_session("personal", "work")
    lock = threading.Lock()

    def burst(tag):
        n = 0
        while True:
            n += 1
            res = eng.store(sid, f"{tag} {n}", f"memory {tag} number {n} " + "x" * (n % 200))
            with lock:  # acknowledged: the write committed before store() returned
                sys.stdout.write(res.id + "\\n")
                sys.stdout.flush()

    threads = [threading.Thread(target=burst, args=(t,), daemon=True) for t in ("a", "b", "c")]
    for t in threads:
        t.start()
    threads[0].join()
    """
)


@pytest.mark.parametrize("kill_after", [1, 37, 400])
def test_sigkill_mid_burst_keeps_every_acknowledged_write(tmp_path, kill_after):
    home = tmp_path / "home"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(home)], stdout=subprocess.PIPE, text=True)
    acked = []
    try:
        for line in proc.stdout:
            acked.append(line.strip())
            if len(acked) >= kill_after:
                break
        assert len(acked) >= kill_after, "the writer process died before the kill"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        # anything flushed between our last read and the kill was acknowledged too
        acked += [line.strip() for line in proc.stdout.read().splitlines() if line.strip()]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    conn = connect(home / "keepmind.db")
    assert scalar(conn, "PRAGMA integrity_check") == "ok"
    conn.close()
    with open_engine(home, settings=defaults(), start_workers=False) as eng:
        with eng.db.snapshot() as conn:
            present = {r[0] for r in conn.execute("SELECT document_id FROM memory_documents")}
            fts_rows = scalar(conn, "SELECT COUNT(*) FROM memory_documents_fts")
            assert fts_rows == len(present)
        missing = [i for i in acked if i not in present]
        assert missing == []
        # the FTS index agrees with the table after recovery
        sid = eng.open_session("personal", "work")
        assert len(eng.find(sid, "memory", limit=100)) == min(100, len(present))


def test_migrations_reach_latest_and_second_run_is_noop(tmp_path):
    conn = connect(tmp_path / "fresh.db")
    applied = migrate(conn, 1)
    assert applied == [name for name, _ in MIGRATIONS]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}
    for table in ("memory_documents", "memory_revisions", "memory_records", "memory_anchors", "memory_edges",
                  "memory_embeddings", "memory_documents_fts", "memory_records_fts", "tombstones",
                  "curation_events", "recall_events", "sessions", "session_turns", "api_tokens",
                  "memory_checkpoints", "_migrations"):
        assert table in tables
    schema = list(conn.execute("SELECT sql FROM sqlite_master ORDER BY name"))
    assert migrate(conn, 2) == []
    assert list(conn.execute("SELECT sql FROM sqlite_master ORDER BY name")) == schema
    assert scalar(conn, "SELECT COUNT(*) FROM _migrations") == len(MIGRATIONS)
    conn.close()


def test_failed_migration_leaves_no_trace_and_no_record(tmp_path):
    conn = connect(tmp_path / "x.db")

    def broken(c):
        c.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        migrate(conn, 1, [("001_broken", broken)])
    assert scalar(conn, "SELECT COUNT(*) FROM sqlite_master WHERE name='half_done'") == 0
    assert scalar(conn, "SELECT COUNT(*) FROM _migrations") == 0
    conn.close()


def test_wal_mode_and_close_is_idempotent_and_waits_for_queued_writes(tmp_path):
    db = Database(tmp_path / "w.db")
    db.write(lambda c: c.execute("CREATE TABLE t (x)"))
    futures = [db.submit(lambda c, i: c.execute("INSERT INTO t VALUES (?)", (i,)), i) for i in range(500)]
    db.close()
    db.close()
    assert all(f.done() and f.exception() is None for f in futures)
    conn = connect(tmp_path / "w.db")
    assert scalar(conn, "PRAGMA journal_mode") == "wal"
    assert scalar(conn, "SELECT COUNT(*) FROM t") == 500
    conn.close()


def test_a_failing_write_rolls_back_entirely(engine, personal):
    def half(conn):
        conn.execute("UPDATE memory_documents SET title='changed'")
        raise ValueError("fails after a partial change")

    doc = engine.store(personal, "original", "body text")
    with pytest.raises(ValueError):
        engine.write(half)
    assert engine.get(personal, [doc.id]).items[0].title == "original"


def test_readers_do_not_block_on_the_writer(engine, personal):
    engine.store(personal, "t", "concurrent body")
    errors = []

    def reader():
        try:
            for _ in range(50):
                engine.find(personal, "concurrent")
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(50):
        engine.store(personal, f"t{i}", f"concurrent body {i}")
    for t in threads:
        t.join()
    assert errors == []


def test_a_long_lived_writer_refreshes_the_planner_statistics_as_the_store_grows(tmp_path):
    """Statistics gathered on a small store made FTS5's range deletes full scans as an import grew
    on one connection (8,400 -> 2,300 memories/s by 60,000): the writer refreshes them whenever the
    rows it changed doubled."""
    eng = open_engine(tmp_path / "home", settings=defaults().with_overrides(memory__embeddings__enabled=False),
                      start_workers=False)
    scope = eng.scope(eng.open_session("personal", "work"))

    def analyzed_rows() -> int:
        # the most any index counted: a partial index (bears_on) counts only the rows it holds
        with eng.db.snapshot() as conn:
            stats = [r[0] for r in conn.execute("SELECT stat FROM sqlite_stat1 WHERE tbl='memory_documents'")]
        return max((int(str(stat).split()[0]) for stat in stats if stat), default=0)

    try:
        assert analyzed_rows() < 10
        for batch in range(4):
            eng.insert_drafts([eng.draft(scope, "", f"fact {batch}-{i} about topic {i % 97} and more words")
                               for i in range(1500)], notify=False)
        assert analyzed_rows() >= 1000
    finally:
        eng.close()
