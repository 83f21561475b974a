"""Lexical candidates read FTS5's ranking first and stop early; the answer is the one a single
query that joins and filters every match before its limit gives, ties and hidden rows included."""

import tempfile
from contextlib import contextmanager
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from keepmind.engine import open_engine, search
from keepmind.engine.clock import FakeClock
from keepmind.engine.settings import defaults

WORDS = ["alpha", "bravo", "charlie"]

memory_st = st.fixed_dictionaries({
    "boundary": st.sampled_from(["work", "home"]),
    "record": st.booleans(),
    "words": st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
})


def reference(conn, scope, terms, now, limit, rank_only=()):
    """The former single query: every match joined and checked, then ordered and limited. With
    `rank_only`, the query is over every term, and only memories matching one of `terms` count."""
    parts, params = [], []
    for table, kind, cols in (("memory_documents", "document", search.doc_columns()),
                              ("memory_records", "record", search.rec_columns())):
        pred, pp = search._candidate_predicate(scope, now, kind, False, False, None)
        parts.append(f"SELECT {cols}, -bm25({table}_fts, {search.BM25_WEIGHTS}) AS lexical"
                     f" FROM {table}_fts JOIN {table} m ON m.rowid = {table}_fts.rowid"
                     f" WHERE {table}_fts MATCH ? AND {pred} AND m.rowid IN"
                     f" (SELECT rowid FROM {table}_fts WHERE {table}_fts MATCH ?)")
        params += [search.fts_match([*terms, *rank_only]), *pp, search.fts_match(terms)]
    sql = " UNION ALL ".join(parts) + " ORDER BY lexical DESC, updated_at DESC LIMIT ?"
    return [(r["id"], round(r["lexical"], 9)) for r in search.rows(conn, sql, (*params, limit))]


@contextmanager
def stored(memories):
    """(engine, clock, the work boundary's scope) over a new store holding `memories`, one second apart."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = FakeClock()
        eng = open_engine(Path(tmp), settings=defaults(), clock=clock, start_workers=False)
        try:
            sessions = {b: eng.open_session("personal", b) for b in ("work", "home")}
            for i, m in enumerate(memories):
                text = " ".join(m["words"])
                clock.advance(1000)
                eng.store(sessions[m["boundary"]], f"{text} {i}", f"{text} memory",
                          memory_class="evidence" if m["record"] else "durable_fact")
            yield eng, clock, eng.scope(sessions["work"])
        finally:
            eng.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memories=st.lists(memory_st, min_size=1, max_size=25), limit=st.integers(1, 8),
       terms=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2, unique=True))
# four memories tied on bm25 and a limit inside the tie: the newest two must be the ones kept
@example(memories=[{"boundary": "work", "record": False, "words": ["alpha"]}] * 4, limit=2, terms=["alpha"])
def test_rank_first_reading_gives_the_joined_querys_answer(memories, limit, terms):
    with stored(memories) as (eng, clock, scope), eng.db.snapshot() as conn:
        want = reference(conn, scope, terms, clock(), limit)
        # 1: the prefix grows round after round, past the first ranked list into the cursor
        for prefix in (search.PREFIX_MIN, 1):
            saved = search.PREFIX_MIN, search.RANKED_PER_LIMIT
            search.PREFIX_MIN, search.RANKED_PER_LIMIT = prefix, min(prefix, search.RANKED_PER_LIMIT)
            try:
                got = [(r["id"], round(score, 9))
                       for r, score in search.lexical_candidates(conn, scope, terms, clock(), limit)]
            finally:
                search.PREFIX_MIN, search.RANKED_PER_LIMIT = saved
            assert got == want


def test_hidden_matches_that_outrank_every_visible_one_do_not_crowd_it_out(tmp_path):
    """300 better-ranked matches in another boundary fill the first prefixes: it grows until the
    visible ones are found, and the answer is the joined query's."""
    clock = FakeClock()
    with open_engine(tmp_path, settings=defaults(), clock=clock, start_workers=False) as eng:
        home, work = eng.open_session("personal", "home"), eng.open_session("personal", "work")
        eng.insert_drafts([eng.draft(eng.scope(home), f"alpha {i}", "alpha alpha") for i in range(300)])
        mine = [eng.store(work, f"note {i}", f"alpha and a much longer body about other things ({i})").id
                for i in range(3)]  # three texts: the same one is not stored twice
        scope = eng.scope(work)
        with eng.db.snapshot() as conn:
            got = search.lexical_candidates(conn, scope, ["alpha"], clock(), 2)
            assert [r["id"] for r, _ in got] == [i for i, _ in reference(conn, scope, ["alpha"], clock(), 2)]
        assert {r["id"] for r, _ in got} <= set(mine) and len(got) == 2


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memories=st.lists(memory_st, min_size=1, max_size=25), limit=st.integers(1, 8),
       split=st.permutations(WORDS), finding=st.integers(1, 2))
def test_terms_that_only_rank_score_as_in_one_query_over_all_terms_but_find_nothing_alone(memories, limit, split,
                                                                                          finding):
    """Automatic recall's common words (`rank_only`) are asked for in two disjoint parts; the
    answer is the single query's over every term, among the memories a finding term matches."""
    terms, rank_only = list(split[:finding]), list(split[finding:])
    with stored(memories) as (eng, clock, scope), eng.db.snapshot() as conn:
        want = reference(conn, scope, terms, clock(), limit, rank_only)
        got = [(r["id"], round(score, 9)) for r, score in
               search.lexical_candidates(conn, scope, terms, clock(), limit, rank_only=rank_only)]
        assert got == want
        alone = search.lexical_candidates(conn, scope, terms, clock(), 100)
        assert {i for i, _ in got} <= {r["id"] for r, _ in alone}   # nothing found by a rank-only term
