"""Every doctor check can fail, and when it does it says what to do (the remedy is part of the message)."""

from __future__ import annotations

import logging
import os

import apsw
import pytest

from keepmind.engine import open_engine
from keepmind.engine.doctor import check_database, check_disk
from keepmind.engine.recall.doctor import check_gate
from keepmind.engine.settings import defaults
from keepmind.engine.writepath.checkpoints import enqueue


def by_name(engine):
    return {c.name: c for c in engine.doctor()}


def _enqueue(engine, n):
    def fill(conn):
        for i in range(n):
            enqueue(conn, trigger="explicit-memory-request", payload={"title": f"t{i}", "content": f"fact {i}"},
                    audience="personal", boundary="work", session_id=None, now=engine.now())
    engine.write(fill)


# -- the store ------------------------------------------------------------------------------------

def test_a_corrupt_database_is_an_error_that_says_to_restore_from_an_export(home, clock):
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        eng.store(sid, "Editor", "prefers dark mode")

        def junk(conn):
            conn.execute("CREATE TABLE junk(x TEXT)")
            conn.execute("CREATE INDEX junk_x ON junk(x)")
            conn.executemany("INSERT INTO junk VALUES (?)", [(f"value {i:05d} " * 8,) for i in range(2000)])
            conn.execute("ANALYZE")  # so opening the store does not need to read the index
        eng.write(junk)
        with eng.db.snapshot() as conn:
            root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='junk_x'").fetchall()[0][0]
            page = conn.execute("PRAGMA page_size").fetchall()[0][0]
    db = home / "keepmind.db"
    with open(db, "r+b") as fh:  # scribble over the index's root page (the data pages stay intact)
        fh.seek((root - 1) * page + 8)
        fh.write(b"\xff" * 64)
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as eng:
        check = check_database(eng)
    assert check.level == "error" and check.message.startswith("integrity check failed")
    assert "restore from your last `keepmind export`" in check.message


def test_a_write_ahead_log_that_keeps_growing_says_to_restart(engine, personal):
    reader = apsw.Connection(str(engine.db.path))
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM memory_documents").fetchall()  # holds the log open
        for i in range(30):
            engine.store(personal, f"Fact {i}", f"the value of item {i} is {i * 7} " * 20)
        check = check_database(engine, wal_warn=64 * 1024)
    finally:
        reader.execute("ROLLBACK")
        reader.close()
    assert check.level == "warning" and "write-ahead log" in check.message
    assert "quit Keepmind and start it again" in check.message


def test_a_large_database_says_how_to_shrink_it(engine):
    check = check_database(engine, size_warn=1024)
    assert check.level == "warning" and "the store is large" in check.message
    assert "memory.recall.receipt_retention_days" in check.message and "`keepmind stats`" in check.message
    assert check_database(engine).level == "pass"


def test_little_free_disk_is_an_error_that_says_to_free_space(engine):
    check = check_disk(engine, min_free=2**62)  # more than any disk has
    assert check.level == "error" and "GB free where the data dir lives" in check.message
    assert "free some space on that disk, or move the data dir" in check.message
    assert check_disk(engine, min_free=1).level == "pass"


# -- the write path -------------------------------------------------------------------------------

def test_a_backlog_over_25_says_to_check_the_llm_and_drain(engine):
    _enqueue(engine, 26)
    check = by_name(engine)["Checkpoint backlog"]
    assert check.level == "warning" and "26 checkpoints waiting" in check.message
    assert "`keepmind checkpoints drain`" in check.message


def test_a_dead_letter_says_how_to_see_and_retry_it(engine):
    _enqueue(engine, 1)
    engine.write(lambda conn: conn.execute("UPDATE memory_checkpoints SET status='dead', last_error='boom'"))
    check = by_name(engine)["Checkpoint backlog"]
    assert check.level == "warning" and check.message.startswith("1 dead-lettered checkpoint ")
    assert "`keepmind checkpoints list --status dead`" in check.message
    assert "`keepmind checkpoints retry ID`" in check.message


# -- models ---------------------------------------------------------------------------------------

@pytest.fixture
def tiny_home(tmp_path, tiny):
    home = tmp_path / "tiny-home"
    tiny.install_tiny(home / "models", "tiny-embed")
    tiny.install_tiny(home / "models", "tiny-other", seed=11, dims=8)
    return home


def _tiny(home, clock, model_id="tiny-embed"):
    settings = defaults().with_overrides(memory__embeddings__model_id=model_id,
                                         memory__embeddings__auto_download=False)
    return open_engine(home, settings=settings, clock=clock, start_workers=False)


def test_embedding_coverage_under_95_percent_says_to_backfill(tiny_home, clock):
    with _tiny(tiny_home, clock) as eng:
        sid = eng.open_session("personal", "work")
        for i in range(20):  # stored before the model is loaded: no vectors yet
            eng.store(sid, f"Fact {i}", f"item {i} is kept")
        eng.models.load(repair=False)
        check = by_name(eng)["Embeddings"]
        assert check.level == "warning" and "only 0% are embedded" in check.message
        assert "`keepmind memory backfill-embeddings`" in check.message
        eng.models.repair_gaps()
        assert by_name(eng)["Embeddings"].level == "pass"


def test_counting_embedded_memories_builds_no_index_on_the_fly(tiny_home, clock, caplog):
    """The count looks each live memory up by its key: SQLite logged "automatic index on live(content_hash)"
    on every doctor run and models page (SQLITE_WARNING_AUTOINDEX) when it was a join."""
    with _tiny(tiny_home, clock) as eng:
        sid = eng.open_session("personal", "work")
        for i in range(20):
            eng.store(sid, f"Fact {i}", f"item {i} is kept")
        eng.models.load()
        with caplog.at_level(logging.WARNING):
            check = by_name(eng)["Embeddings"]
    assert check.level == "pass"
    assert not [r for r in caplog.records if "automatic index" in r.getMessage()]


def test_vectors_of_two_models_say_to_backfill_with_force(tiny_home, clock):
    with _tiny(tiny_home, clock) as eng:
        eng.models.load()
        eng.store(eng.open_session("personal", "work"), "Editor", "prefers dark mode")
    with _tiny(tiny_home, clock, model_id="tiny-other") as eng:
        eng.models.load()  # repairs: the memory now has vectors of both models
        check = by_name(eng)["Embeddings"]
    assert check.level == "warning" and "1 memories also have vectors of another model" in check.message
    assert "`keepmind memory backfill-embeddings --force`" in check.message


def test_a_model_file_failing_verification_says_to_reinstall_it_and_is_hashed_once(tiny_home, clock):
    with _tiny(tiny_home, clock) as eng:
        eng.models.load()
        first = by_name(eng)["Model files"]
        assert first.level == "pass" and "tiny-embed" in first.message and "tiny-other" in first.message
        hashed = eng.models.hashes.hashed
        assert by_name(eng)["Model files"].level == "pass"
        assert eng.models.hashes.hashed == hashed  # nothing changed: nothing read again
        onnx = tiny_home / "models" / "tiny-other" / "model.onnx"
        data = bytearray(onnx.read_bytes())
        data[-1] ^= 0xFF  # same size, different content
        onnx.write_bytes(bytes(data))
        os.utime(onnx, ns=(onnx.stat().st_atime_ns, onnx.stat().st_mtime_ns + 1_000_000))
        check = by_name(eng)["Model files"]
        assert eng.models.hashes.hashed == hashed + 1  # only the changed file
    assert check.level == "error" and check.message.startswith("tiny-other fails verification: model.onnx has sha256")
    assert "reinstall it with `keepmind models download tiny-other`" in check.message


# -- recall ---------------------------------------------------------------------------------------

def test_a_missing_gate_says_which_model_to_install(home, clock):
    settings = defaults().with_overrides(memory__embeddings__auto_download=False)
    with open_engine(home, settings=settings, clock=clock, start_workers=False) as eng:
        eng.models.load(download=False)
        check = check_gate(eng)
    assert check.level == "warning" and "no model gate decides" in check.message
    assert "`keepmind models install-offline`" in check.message


def _receipt(i, gate_ms):
    return {"receipt": f"rcp-{i:032x}", "session_id": None, "query": "q", "injected": [], "degraded": [],
            "timings_ms": {"gate_ms": gate_ms, "total_ms": gate_ms + 5}}


def test_a_gate_over_its_latency_budget_says_to_raise_the_budget(make_engine):
    from keepmind.engine.recall.receipts import insert_receipt

    eng = make_engine(memory__recall__gate__enabled=True, memory__recall__gate_budget_ms=120)

    def add(conn, timings):
        for i, ms in timings:
            insert_receipt(conn, _receipt(i, ms), eng.now())
    eng.write(add, [(i, 30.0) for i in range(10)] + [(10, 400.0), (11, 500.0)])
    assert "over its" not in check_gate(eng).message  # 2 slow recalls of 12: not a pattern
    eng.write(add, [(i, 450.0) for i in range(12, 16)])
    check = check_gate(eng)
    assert check.level == "warning" and "over its 120 ms budget in 6 of the last 16 recalls" in check.message
    assert "raise memory.recall.gate_budget_ms" in check.message


def test_modes_repaired_at_start_are_a_warning_for_a_while_then_a_note(home, clock):
    """The tray stayed amber all day for a file Keepmind had made owner-only at its start."""
    from keepmind.engine.private import REPAIR_NEWS_MS, check_privacy

    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)
    (home / "keepmind.json").write_text("{}")
    (home / "keepmind.json").chmod(0o644)  # as an editor saves it
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as eng:
        assert eng.repaired_modes == ["keepmind.json"]
        first = check_privacy(eng)
        assert first.level == "warning" and "keepmind.json" in first.message and "made them owner-only" in first.message
        clock.advance(REPAIR_NEWS_MS)
        later = check_privacy(eng)
        assert later.level == "pass" and later.message == first.message  # still said, no longer a warning
        (home / "keepmind.json").chmod(0o644)  # widened again while it runs: a warning again at once
        assert check_privacy(eng).level == "warning"
