"""Property tests: no read path returns a memory the audience/boundary rule hides."""

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keepmind.engine import open_engine, search
from keepmind.engine.clock import FakeClock
from keepmind.engine.errors import ScopeError
from keepmind.engine.models import vectors as vec
from keepmind.engine.policy import READABLE
from keepmind.engine.recall.candidates import vector_hits
from keepmind.engine.settings import defaults

AUDIENCES = ["personal", "team"]
BOUNDARIES = ["work", "home", "club"]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo"]

memory_st = st.fixed_dictionaries({
    "session_audience": st.sampled_from(AUDIENCES),
    "narrow": st.booleans(),
    "boundary": st.sampled_from(BOUNDARIES),
    "cls": st.sampled_from(["durable_fact", "evidence"]),
    "words": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
})
reader_st = st.tuples(st.sampled_from(["personal", "team", "public"]), st.sampled_from(BOUNDARIES))


def visible(mem: dict, audience: str, boundary: str) -> bool:
    return (mem["audience"] in READABLE[audience] and mem["boundary"] == boundary
            and mem["author"] != "public")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memories=st.lists(memory_st, min_size=1, max_size=12), readers=st.lists(reader_st, min_size=1, max_size=4),
       public_authored=st.lists(st.tuples(st.sampled_from(AUDIENCES), st.sampled_from(BOUNDARIES)), max_size=2))
def test_no_read_path_returns_a_hidden_memory(memories, readers, public_authored):
    with tempfile.TemporaryDirectory() as tmp:
        clock = FakeClock()
        eng = open_engine(Path(tmp), settings=defaults(), clock=clock, start_workers=False)
        try:
            stored = {}
            for n, m in enumerate(memories):  # n: each text its own (the same one is not stored twice)
                sid = eng.open_session(m["session_audience"], m["boundary"])
                audience = "personal" if m["narrow"] else m["session_audience"]
                text = " ".join(m["words"])
                res = eng.store(sid, text, f"{text} memory {n}", memory_class=m["cls"], audience=audience,
                                facets=["test_profile"])
                stored[res.id] = {"audience": audience, "boundary": m["boundary"], "author": m["session_audience"],
                                  "cls": m["cls"]}
            for n, (audience, boundary) in enumerate(public_authored):  # e.g. from an old import: excluded for everyone
                sid = eng.open_session(audience, boundary)
                res = eng.store(sid, "alpha", f"alpha bravo memory, public {n}", facets=["test_profile"])
                eng.write(lambda c, i: c.execute(
                    "UPDATE memory_documents SET author_audience='public' WHERE document_id=?", (i,)), res.id)
                stored[res.id] = {"audience": audience, "boundary": boundary, "author": "public",
                                  "cls": "durable_fact"}
            # the vector channel: every memory in one index, each row told where its memory lives
            index = vec.VectorIndex("m", 8)
            rng = np.random.default_rng(len(stored))
            with eng.db.snapshot() as conn:
                index.upsert_many(list(stored), rng.normal(size=(len(stored), 8)).astype(np.float32))
                index.set_places(vec.live_places(conn, list(stored)))

            for audience, boundary in readers:
                sid = eng.open_session(audience, boundary)
                expected = {i for i, m in stored.items() if visible(m, audience, boundary)}
                if audience == "public":
                    for call in (lambda sid=sid: eng.find(sid, "alpha"), lambda sid=sid: eng.get(sid, list(stored)),
                                 lambda sid=sid: eng.list_memories(sid), lambda sid=sid: eng.store(sid, "t", "x")):
                        with pytest.raises(ScopeError):
                            call()
                    scope = eng.scope(sid)
                    with eng.db.snapshot() as conn:
                        assert search.lexical_candidates(conn, scope, WORDS, clock(), 100) == []
                        assert search.hydrate_visible(conn, scope, list(stored), clock()) == {}
                    continue
                scope = eng.scope(sid)
                listed = {i.id for i in eng.list_memories(sid, limit=1000)}
                assert listed == expected
                got = {i.id for i in eng.get(sid, list(stored)).items}
                assert got == expected
                found = set()
                for word in WORDS:
                    # limit 1 per word: a hidden memory must never take the single slot
                    top = eng.find(sid, word, limit=1)
                    assert {i.id for i in top} <= expected
                    found |= {i.id for i in eng.find(sid, word, limit=100)}
                assert found == expected
                with eng.db.snapshot() as conn:
                    hydrated = search.hydrate_visible(conn, scope, list(stored), clock())
                    assert set(hydrated) == expected
                    lex = search.lexical_candidates(conn, scope, WORDS, clock(), 1)
                    assert {r["id"] for r, _ in lex} <= expected
                    # profile members (recall's companions) and the narrowed vector channel
                    members = {i for i in expected if stored[i]["cls"] == "durable_fact"}
                    assert {r["id"] for r in search.facet_members(conn, scope, "test_profile", clock(), 1)} <= members
                    assert {r["id"] for r in search.facet_members(conn, scope, "test_profile", clock(), 100)} == members
                    q = np.ones(8, dtype=np.float32)
                    assert {r["id"] for r, _ in vector_hits(conn, scope, index, q, clock(), limit=1)} <= expected
                    assert {r["id"] for r, _ in vector_hits(conn, scope, index, q, clock(), limit=100)} == expected
        finally:
            eng.close()


def test_public_session_writes_nothing(engine):
    sid = engine.open_session("public", "work")
    before = engine.stats()
    with pytest.raises(ScopeError):
        engine.store(sid, "t", "public chatter")
    with pytest.raises(ScopeError):
        engine.update(sid, "doc-" + "0" * 32, delete=True)
    assert engine.stats() == before


def test_cross_boundary_read_needs_an_explicit_policy_entry(home, clock):
    settings = defaults().with_overrides(policy__cross_boundary_reads={"work": ["shared"]})
    with open_engine(home, settings=settings, clock=clock, start_workers=False) as eng:
        shared = eng.open_session("team", "shared")
        doc = eng.store(shared, "Wiki", "the wiki lives at wiki.example")
        work = eng.open_session("personal", "work")
        home_s = eng.open_session("personal", "home")
        assert [i.id for i in eng.find(work, "wiki")] == [doc.id]
        assert eng.find(home_s, "wiki") == []
