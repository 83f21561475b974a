"""The explicit verbs: find, get, store, update — behaviour and clear errors for bad input."""

import pytest

from keepmind.engine import open_engine
from keepmind.engine.clock import DAY_MS, HOUR_MS
from keepmind.engine.errors import EngineError, InvalidInput, MemoryDisabled, NotFound, ScopeError
from keepmind.engine.settings import defaults


def test_store_then_find_and_get(engine, personal):
    stored = engine.store(personal, "Airline", "The user flies with KLM and is a Flying Blue member")
    assert stored.id.startswith("doc-") and len(stored.id) == 36
    found = engine.find(personal, "which airline does the user fly")
    assert [i.id for i in found] == [stored.id]
    got = engine.get(personal, [stored.id])
    assert got.items[0].body.endswith("Flying Blue member") and got.missing == []


def test_find_ranks_title_matches_first(engine, personal):
    body_only = engine.store(personal, "Misc", "coffee is mentioned once here")
    titled = engine.store(personal, "Coffee preference", "likes it black")
    assert [i.id for i in engine.find(personal, "coffee")] == [titled.id, body_only.id]


def test_evidence_expires_after_30_days_but_stays_on_disk(engine, personal, clock):
    rec = engine.store(personal, "Trip", "Flying to Amsterdam next week", memory_class="evidence")
    assert rec.id.startswith("rec-")
    clock.advance(31 * DAY_MS)
    assert engine.find(personal, "amsterdam") == []
    stale = engine.find(personal, "amsterdam", include_expired=True)
    assert [i.id for i in stale] == [rec.id] and stale[0].stale
    assert engine.get(personal, [rec.id]).items[0].stale


def test_trace_is_never_found_unless_asked(engine, personal, clock):
    rec = engine.store(personal, "Debug", "ran the migration script twice", memory_class="trace")
    assert engine.find(personal, "migration") == []
    assert [i.id for i in engine.find(personal, "migration", include_trace=True)] == [rec.id]
    clock.advance(73 * HOUR_MS)
    assert engine.find(personal, "migration", include_trace=True) == []


def test_update_replaces_every_occurrence_and_keeps_revisions(engine, personal):
    doc = engine.store(personal, "Price", "price 10 EUR; was 10 EUR last week")
    result = engine.update(personal, doc.id, old_text="10 EUR", new_text="12 EUR")
    assert result.replacements == 2 and result.revision == 2
    assert engine.get(personal, [doc.id]).items[0].body == "price 12 EUR; was 12 EUR last week"
    revs = engine.revisions(personal, doc.id)
    assert [r["revision"] for r in revs] == [2, 1] and revs[1]["body"].startswith("price 10 EUR")


def test_update_record_supersedes_and_old_id_resolves_to_newest(engine, personal):
    rec = engine.store(personal, "Trip", "Amsterdam on 3 May", memory_class="evidence")
    first = engine.update(personal, rec.id, new_content="Amsterdam on 4 May")
    second = engine.update(personal, first.new_id, old_text="4 May", new_text="5 May")
    assert first.action == second.action == "superseded"
    got = engine.get(personal, [rec.id]).items
    assert [(i.id, i.body) for i in got] == [(second.new_id, "Amsterdam on 5 May")]
    assert [i.id for i in engine.find(personal, "amsterdam")] == [second.new_id]


def test_delete_as_wrong_hides_and_tombstones(engine, personal):
    doc = engine.store(personal, "Home", "The user lives in Utrecht")
    engine.update(personal, doc.id, delete=True)
    assert engine.find(personal, "utrecht") == []
    assert engine.get(personal, [doc.id]).items == []
    from keepmind.engine.store import is_tombstoned
    with engine.db.snapshot() as conn:
        assert is_tombstoned(conn, "the user LIVES in utrecht!", "personal", "work")


def test_delete_record_keeps_chain_but_hides_it(engine, personal):
    rec = engine.store(personal, "Trip", "Lisbon in June", memory_class="evidence")
    engine.update(personal, rec.id, delete=True)
    assert engine.find(personal, "lisbon", include_expired=True) == []
    assert engine.get(personal, [rec.id]).items == []


@pytest.mark.parametrize("kwargs, message", [
    (dict(title="t", content=""), "empty"),
    (dict(title="t", content="   "), "empty"),
    (dict(title="t", content="x", memory_class="rumour"), "unknown memory class"),
    (dict(title="t", content="x", audience="public"), "never widen"),
    (dict(title="t", content="x", audience="galaxy"), "unknown audience"),
    (dict(title=3, content="x"), "must be a string"),
])
def test_store_refuses_bad_input_without_writing(engine, personal, kwargs, message):
    before = engine.stats()
    with pytest.raises(EngineError, match=message):
        engine.store(personal, **kwargs)
    assert engine.stats() == before


def test_team_session_cannot_widen_nor_write_personal(engine, team):
    with pytest.raises(ScopeError):
        engine.store(team, "x", "team secret plan", audience="public")
    narrowed = engine.store(team, "x", "a narrowed memory", audience="personal")
    assert engine.get(team, [narrowed.id]).items == []  # personal is not readable by a team session


@pytest.mark.parametrize("bad", ["", "doc-123", "DOC-" + "a" * 32, "rec-" + "g" * 32, 42, None, "doc:x"])
def test_get_reports_malformed_ids(engine, personal, bad):
    result = engine.get(personal, [bad])
    assert result.items == []
    assert "not a memory id" in result.missing[0][1] or "must be a string" in result.missing[0][1]


def test_get_unknown_id_is_reported_not_raised(engine, personal):
    result = engine.get(personal, ["doc-" + "0" * 32])
    assert result.items == [] and "no memory" in result.missing[0][1]


@pytest.mark.parametrize("kwargs, exc", [
    (dict(), InvalidInput),
    (dict(old_text="", new_text="x"), InvalidInput),
    (dict(old_text="absent", new_text="x"), InvalidInput),
    (dict(new_content=""), InvalidInput),
    (dict(new_content="x", old_text="a", new_text="b"), InvalidInput),
    (dict(delete=True, new_content="x"), InvalidInput),
])
def test_update_refuses_bad_input_and_changes_nothing(engine, personal, kwargs, exc):
    doc = engine.store(personal, "Keep", "original text")
    with pytest.raises(exc):
        engine.update(personal, doc.id, **kwargs)
    assert engine.get(personal, [doc.id]).items[0].body == "original text"
    assert [r["revision"] for r in engine.revisions(personal, doc.id)] == [1]


def test_update_of_invisible_memory_is_not_found(engine, personal):
    other = engine.open_session("personal", "home")
    doc = engine.store(other, "Home", "lives in Utrecht")
    with pytest.raises(NotFound):
        engine.update(personal, doc.id, new_content="lives in Delft")
    assert engine.get(other, [doc.id]).items[0].body == "lives in Utrecht"


def test_find_rejects_empty_query_and_bad_limit(engine, personal):
    with pytest.raises(InvalidInput):
        engine.find(personal, "  ")
    with pytest.raises(InvalidInput):
        engine.find(personal, "x", limit=0)
    with pytest.raises(InvalidInput):
        engine.find(personal, "x", limit=True)


def test_fts_syntax_in_queries_is_treated_as_words(engine, personal):
    doc = engine.store(personal, "Quote", 'he said "NEAR" AND (maybe) OR not*')
    for query in ['"NEAR"', "AND OR NOT", "not*", "(maybe)", "title:x", '"""', "^near"]:
        engine.find(personal, query)  # never a syntax error
    assert [i.id for i in engine.find(personal, "(maybe)")] == [doc.id]


def test_memory_disabled_refuses_tools(home, clock):
    settings = defaults().with_overrides(memory__enabled=False)
    with open_engine(home, settings=settings, clock=clock, start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        for call in (lambda: eng.find(sid, "x"), lambda: eng.get(sid, ["doc-" + "0" * 32]),
                     lambda: eng.store(sid, "t", "c"), lambda: eng.update(sid, "doc-" + "0" * 32, delete=True)):
            with pytest.raises(MemoryDisabled, match="memory.enabled"):
                call()
        assert eng.status()["status"] == "paused"


def test_relations_close_old_interval(engine, personal, clock):
    from keepmind.engine.store import Relation
    engine.store(personal, "Home airport", "home airport is AMS", anchor="user",
                 relations=[Relation("home_airport", "AMS")])
    clock.advance(DAY_MS)
    engine.store(personal, "Home airport", "home airport is now RTM", anchor="user",
                 relations=[Relation("home_airport", "RTM")])
    with engine.db.snapshot() as conn:
        edges = list(conn.execute(
            "SELECT a.canonical_name, e.valid_from, e.valid_to FROM memory_edges e"
            " JOIN memory_anchors a ON a.anchor_id = e.to_anchor_id ORDER BY e.valid_from"))
    assert [e[0] for e in edges] == ["AMS", "RTM"]
    assert edges[0][2] == edges[1][1]  # the old interval closed when the new one opened
    assert edges[1][2] is None
    assert engine.stats()["anchors"] == 3  # user, AMS, RTM — "user" deduplicated
