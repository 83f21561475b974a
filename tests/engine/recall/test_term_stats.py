"""Recall's term statistics saved and restored across starts: the same counts as a full count,
revisions never counted twice, and a full count whenever the saved counts cannot be trusted."""

from collections import Counter

from keepmind.engine.clock import DAY_MS
from keepmind.engine.recall import terms
from keepmind.engine.recall.terms import TermStats
from keepmind.engine.store import watermarks

FACTS = [("Coffee", "The user drinks oat flat whites every morning"),
         ("Pets", "Has a greyhound named Pixel who hates rain"),
         ("Travel", "Always books a window seat on long flights"),
         ("Work", "Works as a data engineer at Acme in Lisbon"),
         ("Music", "Plays the cello in a community orchestra on Tuesdays")]


def _full_count(engine) -> TermStats:
    fresh = TermStats()
    with engine.db.snapshot() as conn:
        fresh.build(conn)
    return fresh


def _same(a: TermStats, b: TermStats) -> bool:
    return a.size == b.size and Counter(a._df) == Counter(b._df)


def _saved(engine) -> bytes | None:
    with engine.db.snapshot() as conn:
        return terms.load_snapshot(conn)


def test_a_restart_restores_the_saved_counts_and_counts_only_what_came_since(make_engine, home, clock):
    first = make_engine(home)
    session = first.open_session("personal", "work")
    for title, body in FACTS[:3]:
        first.store(session, title, body)
    first.recaller.build_stats()
    assert not first.recaller.stats.restored and _saved(first) is not None
    first.close()

    second = make_engine(home)
    second.recaller.build_stats()
    assert second.recaller.stats.restored and _same(second.recaller.stats, _full_count(second))
    session = second.open_session("personal", "work")
    for title, body in FACTS[3:]:
        second.store(session, title, body)  # counted by the write listener
    assert second.recaller.stats.size == 5 and _same(second.recaller.stats, _full_count(second))
    second.close()

    third = make_engine(home)  # the saved counts cover 3 memories: the 2 since are counted at build
    third.recaller.build_stats()
    assert third.recaller.stats.restored and _same(third.recaller.stats, _full_count(third))
    assert terms.memory_stems("", "greyhound Pixel") <= set(third.recaller.stats._df)


def test_a_revision_is_never_counted_twice(make_engine, home):
    engine = make_engine(home)
    session = engine.open_session("personal", "work")
    old = engine.store(session, *FACTS[0]).id
    engine.recaller.build_stats()
    new = engine.store(session, *FACTS[1]).id
    assert engine.recaller.stats.size == 2
    engine.update(session, old, new_content="The user drinks espresso every morning")
    engine.update(session, new, new_content="Has a greyhound named Pixel who loves the beach")
    assert engine.recaller.stats.size == 2


def test_old_ahead_or_damaged_saved_counts_are_not_trusted(make_engine, home, clock):
    engine = make_engine(home)
    session = engine.open_session("personal", "work")
    for title, body in FACTS:
        engine.store(session, title, body)
    with engine.db.snapshot() as conn:
        marks = watermarks(conn)
        good = terms._dump(Counter({"coffe": 1}), 1, marks, clock())
        ahead = terms._dump(Counter({"coffe": 1}), 1, (marks[0] + 1, marks[1]), clock())
        old = terms._dump(Counter({"coffe": 1}), 1, marks, clock() - 8 * DAY_MS)
        for saved, trusted in ((good, True), (ahead, False), (old, False), (b"\x00garbage", False), (None, False)):
            stats = TermStats()
            worth_saving = stats.build(conn, saved, now=clock())
            assert stats.restored is trusted
            assert (worth_saving is None) is trusted  # a full count is saved; a fresh restore is not
            assert stats.size == (1 if trusted else len(FACTS))


def test_many_memories_since_the_saved_counts_make_new_ones_worth_saving(make_engine, home, clock, monkeypatch):
    monkeypatch.setattr(terms, "SNAPSHOT_STALE_AFTER", 2)
    engine = make_engine(home)
    session = engine.open_session("personal", "work")
    engine.store(session, *FACTS[0])
    with engine.db.snapshot() as conn:
        saved = TermStats().build(conn, now=clock())
    for title, body in FACTS[1:]:
        engine.store(session, title, body)
    with engine.db.snapshot() as conn:
        stats = TermStats()
        again = stats.build(conn, saved, now=clock())
    assert stats.restored and again is not None and _same(stats, _full_count(engine))
