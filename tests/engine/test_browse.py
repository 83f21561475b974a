"""Browsing as a person does: keyset pages with filters and sorts, search, and recall statistics,
always through the viewer's visibility."""

from __future__ import annotations

import pytest

from keepmind.engine import InvalidInput, MemoryFilter
from keepmind.engine.clock import DAY_MS, HOUR_MS


def fill(engine, clock, sid, n, **kw):
    ids = []
    for i in range(n):
        clock.advance(1000)
        kind = kw.get("memory_class", "durable_fact")  # distinct texts: the same one is not stored twice
        ids.append(engine.store(sid, f"Note {i}", f"Note number {i} about gardening ({kind}).", **kw).id)
    return ids


def walk(engine, scope, **kw):
    """Every page of a listing, following the cursors; the items' ids in order."""
    seen, cursor, pages = [], None, 0
    while True:
        page = engine.browse(scope, cursor=cursor, **kw)
        seen += [i.id for i in page.items]
        pages += 1
        if page.next_cursor is None:
            return seen, pages
        cursor = page.next_cursor


def test_keyset_pages_cover_every_memory_once_newest_first(engine, clock):
    sid = engine.open_session("personal", "work")
    docs = fill(engine, clock, sid, 7)
    recs = fill(engine, clock, sid, 6, memory_class="evidence")
    viewer = engine.viewer(engine.create_token("me", "personal").token)
    seen, pages = walk(engine, viewer, limit=4)
    assert seen == list(reversed(docs + recs))  # interleaved by time across both tables
    assert pages == 4
    assert walk(engine, viewer, limit=4, flt=MemoryFilter(memory_class="evidence"))[0] == list(reversed(recs))


def test_filters_narrow_inside_the_query_and_expired_is_its_own_view(engine, clock):
    work = engine.open_session("personal", "work")
    home = engine.open_session("team", "home")
    kept = engine.store(work, "Pinned", "A durable fact.", anchor="Garden").id
    team = engine.store(home, "Team", "A team fact.", source="import").id
    old = engine.store(work, "Old", "Evidence that will expire.", memory_class="evidence").id
    clock.advance(31 * DAY_MS)
    viewer = engine.viewer(engine.create_token("me", "personal").token)
    ids = lambda **f: [i.id for i in engine.browse(viewer, flt=MemoryFilter(**f)).items]  # noqa: E731
    assert set(ids()) == {kept, team}
    assert ids(state="expired") == [old]
    assert ids(boundary="home") == [team] and ids(audience="team") == [team]
    assert ids(source="imported") == [team] and ids(source="agent") == [kept]
    anchor_id = engine.memory(viewer, kept).anchor_id
    assert ids(anchor_id=anchor_id) == [kept]
    assert engine.memory(viewer, kept).extra["anchor_name"] == "Garden"
    team_viewer = engine.viewer(engine.create_token("t", "team").token)
    assert [i.id for i in engine.browse(team_viewer).items] == [team]
    with pytest.raises(InvalidInput):
        engine.browse(viewer, flt=MemoryFilter(memory_class="gossip"))
    with pytest.raises(InvalidInput, match="page link"):
        engine.browse(viewer, cursor="n.1.doc-nothex")


def test_recall_sorts_put_recalled_memories_first_then_the_rest(engine, clock):
    sid = engine.open_session("personal", "work")
    a = engine.store(sid, "Coffee", "The user drinks oat-milk flat whites.").id
    clock.advance(HOUR_MS)
    b = engine.store(sid, "Marathon", "The user trains for the Berlin marathon.").id
    clock.advance(HOUR_MS)
    c = engine.store(sid, "Laptop", "The user has a ThinkPad.").id
    for message in ("flat whites with oat milk", "oat-milk flat whites again", "Berlin marathon training"):
        clock.advance(HOUR_MS)
        engine.recall(engine.open_session("personal", "work"), message)
    engine.db.write(lambda conn: None)  # receipts are written off the turn's path
    viewer = engine.viewer(engine.create_token("me", "personal").token)
    most = walk(engine, viewer, sort="most_recalled", limit=2)[0]
    last = walk(engine, viewer, sort="last_recalled", limit=2)[0]
    assert most == [a, b, c] and last == [b, a, c]
    assert engine.memory(viewer, a).extra["recalled_count"] == 2
    history = engine.recall_history(viewer, a)
    assert history["count"] == 2 and [r["query"] for r in history["receipts"]] == [
        "oat-milk flat whites again", "flat whites with oat milk"]


def test_search_finds_words_inside_the_viewers_filters(engine):
    work = engine.open_session("personal", "work")
    engine.store(work, "Dentist", "The dentist appointment is on 14 March.")
    engine.store(work, "Dentist evidence", "The dentist called back.", memory_class="evidence")
    engine.store(engine.open_session("personal", "other"), "Dentist elsewhere", "Another dentist.")
    narrow = engine.viewer(engine.create_token("w", "personal", ["work"]).token)
    assert {i.title for i in engine.search_memories(narrow, "dentist")} == {"Dentist", "Dentist evidence"}
    found = engine.search_memories(narrow, "dentist", flt=MemoryFilter(memory_class="durable_fact"))
    assert [i.title for i in found] == ["Dentist"] and found[0].score > 0
    with pytest.raises(InvalidInput):
        engine.search_memories(narrow, "   ")


@pytest.mark.offline_model
def test_search_finds_meaning_with_the_offline_embedder(make_engine, offline_models_home):
    engine = make_engine(offline_models_home, memory__embeddings__auto_download=False)
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Pet", "The user has a golden retriever called Biscuit.")
    engine.store(sid, "Car", "The user drives a blue Volvo.")
    engine.models.load(download=False)  # loads the embedder and embeds what lacks a vector
    assert engine.models.embedder() is not None, engine.models.status_reasons()
    viewer = engine.viewer(engine.create_token("me", "personal").token)
    found = engine.search_memories(viewer, "which dog breed")
    assert [i.title for i in found][:1] == ["Pet"]
    assert engine.search_memories(viewer, "Volvo")[0].title == "Car"


def test_search_puts_memories_with_every_word_first_and_fills_with_any_word(engine):
    sid = engine.open_session("personal", "work")
    both = engine.store(sid, "Trip", "Flight to Lisbon on Friday.").id
    one = engine.store(sid, "Other", "A flight was delayed.").id
    other = engine.store(sid, "City", "Lisbon has trams.").id
    viewer = engine.viewer(engine.create_token("me", "personal").token)
    found = [i.id for i in engine.search_memories(viewer, "flight lisbon")]
    assert found[0] == both and set(found) == {both, one, other}
    assert [i.id for i in engine.search_memories(viewer, "flight lisbon", limit=1)] == [both]
