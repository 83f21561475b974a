"""The doctor's database check is steady while Keepmind writes, and still finds a real corruption.

Inside the server the check used to run on the thread's own reader connection. FTS5 caches its
index structure on a connection, and the FTS5 part of `PRAGMA quick_check` reads the index through
that cache without first checking that the database changed: after a search on that thread and some
writes (the writer merges and replaces segments), the check read a segment that no longer exists
and reported "fts5: corruption found reading blob ..." for a sound database.
"""

from __future__ import annotations

import threading

import apsw

from keepmind.engine.doctor import check_database, run_checks

ROUNDS = 6


def _burst(engine, sid, tag: str, n: int = 12) -> int:
    """Store n distinct memories, rewrite a third and delete a third: FTS5 segments get merged."""
    ids = [engine.store(sid, f"Fact {tag} {i}", f"alpha zq{tag}x{i} colour{i * 13} town{tag}k{i} "
                                                  f"fruit{(i * 31) % 97}").id for i in range(n)]
    ids = [i for i in ids if i]
    for memory_id in ids[::3]:
        engine.update(sid, memory_id, new_content=f"alpha rewritten {tag} {memory_id[-8:]} beta")
    for memory_id in ids[1::3]:
        engine.update(sid, memory_id, delete=True)
    return len(ids)


def test_a_search_then_writes_do_not_make_the_check_report_corruption(engine, personal):
    """As on the Doctor page: the thread that runs the check has searched before (its reader
    holds FTS5's structure) and the writer has changed the index since."""
    _burst(engine, personal, "seed")
    found = []
    for rnd in range(ROUNDS):
        assert engine.find(personal, "alpha", limit=5)  # this thread's reader caches the FTS5 structure
        assert _burst(engine, personal, f"r{rnd}") > 0
        check = check_database(engine)
        found.append((check.level, check.message))
    assert [level for level, _ in found] == ["pass"] * ROUNDS, found
    doctor = {c.name: c for c in engine.doctor()}["Database"]
    assert doctor.level == "pass" and "integrity ok" in doctor.message


def test_the_check_stays_quiet_while_another_thread_keeps_writing(engine, personal):
    """One thread stores, rewrites and deletes without pause; another searches and checks, each
    check after at least one more write. No check may report a corruption."""
    stop = threading.Event()
    writes = [0]
    errors: list[BaseException] = []

    def writer():
        n = 0
        try:
            while not stop.is_set():
                n += 1
                writes[0] += _burst(engine, personal, f"w{n}", n=6)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=writer, name="test-writer", daemon=True)
    thread.start()
    found = []
    try:
        for _ in range(25):
            seen = writes[0]
            while writes[0] == seen and thread.is_alive():
                stop.wait(0.005)
            engine.find(personal, "alpha", limit=5)
            check = check_database(engine)
            found.append((check.level, check.message))
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not errors, errors
    assert writes[0] > 0
    bad = [f for f in found if f[0] != "pass"]
    assert not bad, f"{len(bad)} of {len(found)} checks failed: {bad[0]}"


def _delete_fts_segments(engine) -> None:
    """A real corruption: the structure record stays, the segment pages it names are gone."""
    conn = apsw.Connection(str(engine.db.path))
    try:
        conn.set_busy_timeout(5000)
        conn.execute("DELETE FROM memory_documents_fts_data WHERE id > 10")
        assert conn.execute("SELECT count(*) FROM memory_documents_fts_data").fetchall()[0][0] >= 1
    finally:
        conn.close()


def test_a_real_fts_corruption_in_a_running_store_is_still_reported(engine, personal):
    _burst(engine, personal, "seed")
    assert check_database(engine).level == "pass"
    engine.find(personal, "alpha", limit=5)
    _delete_fts_segments(engine)
    for _ in range(2):  # every time, not only the first
        check = check_database(engine)
        assert check.level == "error" and check.message.startswith("integrity check failed"), check
        assert "memory_documents_fts" in check.message
        assert "restore from your last `keepmind export`" in check.message


def test_a_real_fts_corruption_found_on_reopening_the_store(home, make_engine):
    engine = make_engine(home)
    sid = engine.open_session("personal", "work")
    _burst(engine, sid, "seed")
    _delete_fts_segments(engine)
    engine.close()
    reopened = make_engine(home)
    check = check_database(reopened)
    assert check.level == "error" and "memory_documents_fts" in check.message, check


def test_a_closed_engine_is_a_failed_check_not_a_corruption(make_engine):
    engine = make_engine()
    engine.close()
    check = {c.name: c for c in run_checks(engine)}["Database"]
    assert check.level == "error" and "the check itself failed" in check.message
    assert "integrity check failed" not in check.message
