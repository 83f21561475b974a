"""A person's corrections never rewrite history: revert is a new revision, restore lifts a
tombstone, narrowing takes the graph along, a rename or merge keeps the old name as an alias."""

from __future__ import annotations

import pytest

from keepmind.engine import InvalidInput, NotFound, Relation, ScopeError
from keepmind.engine.clock import DAY_MS


@pytest.fixture
def me(engine):
    return engine.create_token("me", "personal").token


def test_revert_makes_a_new_revision_and_the_diff_shows_it(engine, me):
    sid = engine.open_session("personal", "work")
    doc = engine.store(sid, "Airport", "My home airport is Lisbon.").id
    engine.update(sid, doc, old_text="Lisbon", new_text="Porto")
    viewer = engine.viewer(me)
    assert [(p.op, p.text) for p in engine.diff(viewer, doc, 1, 2) if p.op != "equal"] == [
        ("delete", "Lisbon"), ("insert", "Porto")]
    result = engine.revert(viewer, doc, 1)
    assert result.revision == 3
    assert engine.memory(viewer, doc).body == "My home airport is Lisbon."
    revs = engine.revisions(viewer, doc)
    assert [(r["revision"], r["reason"]) for r in revs] == [(3, "revert to 1"), (2, "replace"), (1, "created")]
    assert [(p.op, p.text) for p in engine.diff(viewer, doc, 2, 3) if p.op != "equal"] == [
        ("delete", "Porto"), ("insert", "Lisbon")]
    with pytest.raises(InvalidInput, match="already the current"):
        engine.revert(viewer, doc, 3)
    with pytest.raises(NotFound):
        engine.diff(viewer, doc, 1, 9)


def test_restore_lifts_the_tombstone_and_the_fact_can_be_learnt_again(engine, me, clock):
    sid = engine.open_session("personal", "work")
    doc = engine.store(sid, "Sky", "The sky is green.").id
    rec = engine.store(sid, "Seen", "A green sky was seen.", memory_class="evidence").id
    engine.update(sid, doc, delete=True, source="ui")
    clock.advance(1000)
    engine.update(sid, rec, delete=True)
    deleted, cursor = engine.deleted(token=me)
    assert [(d["memory_id"], d["title"], d["source"]) for d in deleted] == [(rec, "Seen", "tool"), (doc, "Sky", "ui")]
    assert cursor is None
    assert engine.find(sid, "green") == []
    for d in deleted:
        engine.restore(d["tombstone_id"], token=me)
    assert engine.deleted(token=me) == ([], None)
    assert {i.title for i in engine.find(sid, "green")} == {"Sky", "Seen"}
    assert engine.get(sid, [rec]).items[0].body == "A green sky was seen."  # the old id resolves
    with pytest.raises(NotFound):
        engine.restore(deleted[0]["tombstone_id"], token=me)


def test_deleted_pages_and_is_cut_to_the_token(engine, me):
    sid = engine.open_session("personal", "work")
    for n in range(5):
        engine.update(sid, engine.store(sid, f"Wrong {n}", f"Wrong claim {n}.").id, delete=True)
    first, cursor = engine.deleted(token=me, limit=3)
    rest, end = engine.deleted(token=me, cursor=cursor, limit=3)
    assert len(first) == 3 and len(rest) == 2 and end is None
    assert len({d["tombstone_id"] for d in first + rest}) == 5
    team = engine.create_token("t", "team").token
    assert engine.deleted(token=team) == ([], None)
    with pytest.raises(NotFound):
        engine.restore(first[0]["tombstone_id"], token=team)


def test_narrowing_a_memory_takes_its_edges_away_from_the_wider_audience(engine, me):
    sid = engine.open_session("team", "work")
    doc = engine.store(sid, "Anna", "Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                       relations=[Relation("lives_in", "Lisbon", "place")]).id
    team = engine.viewer(engine.create_token("t", "team").token)
    assert [a.name for a in engine.anchors(team)] == ["Anna", "Lisbon"]
    engine.narrow_audience(engine.viewer(me), [doc], "personal", token=me)
    assert engine.browse(team).items == [] and engine.anchors(team) == []
    mine = engine.viewer(me)
    item = engine.memory(mine, doc)
    assert item.audience == "personal" and item.extra["anchor_name"] == "Anna"
    anna = next(a for a in engine.anchors(mine) if a.name == "Anna" and a.audience == "personal")
    assert [(e.relation, e.to_name) for e in engine.edges(mine, anna.id)] == [("lives_in", "Lisbon")]
    with pytest.raises(ScopeError):
        engine.narrow_audience(mine, [doc], "team", token=me)
    with pytest.raises(ScopeError):  # a team token cannot make anything personal
        engine.narrow_audience(team, [engine.store(sid, "T", "Team note.").id], "personal",
                               token=engine.get_token("t"))


def test_rename_and_merge_keep_the_old_names_as_aliases(engine, me, clock):
    sid = engine.open_session("personal", "work")
    a = engine.store(sid, "Bob", "Bob likes tea.", anchor="Bob", anchor_type="person",
                     relations=[Relation("works_at", "Acme", "org")]).id
    b = engine.store(sid, "Robert", "Robert Smith plays chess.", anchor="Robert Smith", anchor_type="person").id
    viewer = engine.viewer(me)
    names = {x.name: x.id for x in engine.anchors(viewer)}
    with pytest.raises(InvalidInput, match="merge them instead"):
        engine.rename_anchor(viewer, names["Bob"], "robert smith")
    assert engine.rename_anchor(viewer, names["Bob"], "Bobby") == "Bobby"
    clock.advance(DAY_MS)
    merged = engine.merge_anchors(viewer, names["Bob"], names["Robert Smith"])
    assert (merged["from_name"], merged["memories_moved"], merged["edges_moved"]) == ("Bobby", 1, 1)
    robert = engine.anchor(viewer, names["Robert Smith"])
    assert robert.memories == 2 and robert.edges == 1
    assert {i.id for i in engine.browse(viewer, flt=_anchor(robert.id)).items} == {a, b}
    assert engine.anchor_history(viewer, robert.id)["aliases"] == ["Bob", "Bobby"]
    assert [m["from_name"] for m in engine.anchor_history(viewer, robert.id)["merges"]] == ["Bobby"]
    assert engine.merged_into(viewer, names["Bob"]) == robert.id
    with pytest.raises(NotFound):
        engine.anchor(viewer, names["Bob"])
    # A later mention of a former name lands on the anchor it became.
    later = engine.store(sid, "Bob again", "Bob moved to Leeds.", anchor="bob").id
    assert engine.memory(viewer, later).anchor_id == robert.id
    assert [x.name for x in engine.anchors(viewer, query="bobby")] == ["Robert Smith"]


def _graph(engine, viewer) -> dict:
    """What a merge may change, as a person sees it: each anchor's memories, edges and aliases."""
    out = {}
    for a in engine.anchors(viewer):
        out[a.name] = ({i.id for i in engine.browse(viewer, flt=_anchor(a.id)).items},
                       sorted((e.relation, e.from_name, e.to_name, e.current) for e in engine.edges(viewer, a.id)),
                       engine.anchor_history(viewer, a.id)["aliases"])
    return out


def test_the_last_merge_into_an_anchor_can_be_undone_and_everything_goes_back(engine, me, clock):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Bob", "Bob likes tea.", anchor="Bob", anchor_type="person",
                 relations=[Relation("works_at", "Acme", "org"), Relation("knows", "Robert Smith", "person")])
    engine.store(sid, "Robert", "Robert Smith plays chess.", anchor="Robert Smith", anchor_type="person")
    viewer = engine.viewer(me)
    names = {x.name: x.id for x in engine.anchors(viewer)}
    engine.rename_anchor(viewer, names["Bob"], "Bobby")  # an alias ("Bob") that moves with the merge
    before = _graph(engine, viewer)
    clock.advance(DAY_MS)
    merged = engine.merge_anchors(viewer, names["Bob"], names["Robert Smith"])
    assert _graph(engine, viewer) != before
    [m] = engine.anchor_history(viewer, names["Robert Smith"])["merges"]
    assert m["undo_blocked"] is None
    clock.advance(DAY_MS)
    undone = engine.undo_merge(viewer, merged["merge_id"])
    assert (undone["from_name"], undone["memories_back"], undone["edges_back"]) == ("Bobby", 1, 2)
    assert _graph(engine, viewer) == before  # the knows edge the merge had closed as a loop holds again
    assert engine.anchor(viewer, names["Bob"]).name == "Bobby" and engine.merged_into(viewer, names["Bob"]) is None
    assert engine.anchor_history(viewer, names["Robert Smith"])["merges"] == []
    later = engine.store(sid, "Bob again", "Bob moved to Leeds.", anchor="bob").id  # the alias is Bobby's again
    assert engine.memory(viewer, later).anchor_id == names["Bob"]
    with pytest.raises(NotFound, match="undone already"):
        engine.undo_merge(viewer, merged["merge_id"])


def test_only_the_last_merge_into_a_standing_anchor_can_be_undone(engine, me):
    sid = engine.open_session("personal", "work")
    for name in ("Ann", "Anna", "Anne", "Annie"):
        engine.store(sid, name, f"{name} called.", anchor=name, anchor_type="person")
    viewer = engine.viewer(me)
    names = {x.name: x.id for x in engine.anchors(viewer)}
    first = engine.merge_anchors(viewer, names["Ann"], names["Anna"])
    engine.merge_anchors(viewer, names["Anne"], names["Anna"])
    with pytest.raises(InvalidInput, match="“Anne” was merged into “Anna” since: undo that merge first"):
        engine.undo_merge(viewer, first["merge_id"])
    blocked = {m["from_name"]: m["undo_blocked"] for m in engine.anchor_history(viewer, names["Anna"])["merges"]}
    assert blocked["Anne"] is None and "undo that merge first" in blocked["Ann"]
    last = engine.merge_anchors(viewer, names["Anna"], names["Annie"])
    with pytest.raises(InvalidInput, match="“Anna” was merged into “Annie” since"):
        engine.undo_merge(viewer, first["merge_id"])
    engine.undo_merge(viewer, last["merge_id"])
    team = engine.viewer(engine.create_token("team-only", "team").token)
    [latest] = [m for m in engine.anchor_history(viewer, names["Anna"])["merges"] if m["from_name"] == "Anne"]
    with pytest.raises(NotFound):  # a scope that cannot see the anchor cannot undo its merge
        engine.undo_merge(team, latest["merge_id"])


def test_merging_across_audiences_is_refused(engine, me):
    engine.store(engine.open_session("personal", "work"), "P", "Personal.", anchor="Alpha")
    engine.store(engine.open_session("team", "work"), "T", "Team.", anchor="Beta")
    viewer = engine.viewer(me)
    names = {x.name: x.id for x in engine.anchors(viewer)}
    with pytest.raises(InvalidInput, match="different"):
        engine.merge_anchors(viewer, names["Alpha"], names["Beta"])


def test_provenance_shows_the_session_turns_or_the_file_and_line(engine, me, tmp_path):
    sid = engine.open_session("personal", "work", title="chat")
    engine.add_turn(sid, user="Hello there.", assistant="Hi!")
    engine.add_turn(sid, user="My cat is called Miso.", assistant="Noted.")
    doc = engine.store(sid, "Cat", "The user's cat is called Miso.", provenance={"session_id": sid, "turns": [2]}).id
    viewer = engine.viewer(me)
    prov = engine.provenance(viewer, doc, token=me)
    assert prov["session"]["title"] == "chat"
    assert [(t["turn_index"], t["source"]) for t in prov["turns"]] == [(1, False), (2, True)]
    notes = tmp_path / "MEMORY.md"
    notes.write_text("# Memory\n\n## Tools\n\nI use vim for everything.\n", encoding="utf-8")
    from keepmind.engine.transfer import import_path

    import_path(engine, notes, audience="personal", boundary="work")
    engine.drain_checkpoints()  # a Markdown import is curated like everything else
    imported = engine.search_memories(viewer, "vim")[0]
    prov = engine.provenance(viewer, imported.id, token=me)
    assert prov["session"] is None
    assert prov["files"] == [{"kind": "file", "ref": "MEMORY.md", "line": 5, "section": "Tools"}]
    team = engine.create_token("t", "team").token
    team_doc = engine.store(engine.open_session("team", "work"), "Shared", "Shared.",
                            provenance={"session_id": sid, "turns": [1]}).id
    hidden = engine.provenance(engine.viewer(team), team_doc, token=team)
    assert hidden["hidden"] and not hidden["elsewhere"] and hidden["turns"] == []
    # an imported memory names a session of the store it came from, which this one does not hold
    moved = engine.store(sid, "Dog", "The user's dog is called Rex.",
                         provenance={"session_id": "ses-" + "9" * 32, "turns": [3]}).id
    elsewhere = engine.provenance(viewer, moved, token=me)
    assert elsewhere["elsewhere"] and not elsewhere["hidden"] and elsewhere["source_turns"] == [3]


def _anchor(anchor_id):
    from keepmind.engine import MemoryFilter

    return MemoryFilter(anchor_id=anchor_id)


def test_a_personal_session_cannot_write_its_words_into_a_team_memory(engine):
    from keepmind.engine import ScopeError

    team = engine.open_session("team", "work")
    mine = engine.open_session("personal", "work")
    deploy = engine.store(team, "Deploy", "The team deploys the billing service on Thursdays.").id
    assert engine.get(mine, [deploy]).items  # it reads its boundary's team memories
    for change in ({"old_text": "Thursdays", "new_text": "Thursdays (my manager Bob is incompetent)"},
                   {"new_content": "My manager Bob is incompetent."}, {"title": "Bob"}):
        with pytest.raises(ScopeError, match="this is a team memory and this session is personal"):
            engine.update(mine, deploy, **change)
    assert engine.get(team, [deploy]).items[0].body == "The team deploys the billing service on Thursdays."
    engine.update(team, deploy, old_text="Thursdays", new_text="Fridays")  # from a team session it may
    assert "Fridays" in engine.get(team, [deploy]).items[0].body


def test_an_edit_that_changes_nothing_makes_no_revision(engine):
    me = engine.open_session("personal", "work")
    doc = engine.store(me, "Allergy", "The user is allergic to peanuts.").id
    same = engine.update(me, doc, old_text="peanuts", new_text="peanuts")
    assert (same.action, same.revision) == ("unchanged", 1) and "nothing was changed" in same.reason
    assert engine.update(me, doc, new_content="The user is allergic to peanuts.").action == "unchanged"
    assert len(engine.revisions(me, doc)) == 1
    changed = engine.update(me, doc, old_text="peanuts", new_text="cashews")
    assert (changed.action, changed.revision) == ("replaced", 2)


def test_a_correction_renames_the_topic_anchor_named_by_its_words(engine, clock):
    from support.provider import drain

    me = engine.open_session("personal", "work")
    engine.add_turn(me, user="I play the cello on Tuesdays.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    drain(engine)
    [doc] = engine.list_memories(me)
    with engine.db.snapshot() as conn:
        before = conn.execute("SELECT canonical_name FROM memory_anchors WHERE anchor_type='topic'").fetchone()[0]
    assert "Tuesdays" in before
    engine.update(me, doc.id, old_text="Tuesdays", new_text="Thursdays")
    with engine.db.snapshot() as conn:
        [(name,)] = conn.execute("SELECT canonical_name FROM memory_anchors WHERE anchor_type='topic'").fetchall()
        aliases = [a for (a,) in conn.execute("SELECT alias FROM anchor_aliases")]
    assert name == before.replace("Tuesdays", "Thursdays") and before in aliases


def _current(engine, viewer, name):
    anchor = next(a for a in engine.anchors(viewer) if a.name == name)
    return sorted((e.from_name, e.relation, e.to_name) for e in engine.edges(viewer, anchor.id) if e.current)


def test_a_correction_takes_the_graph_along(engine, me, clock):
    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    doc = engine.store(sid, "Home", "My sister Anna lives in Trondheim.", anchor="Anna", anchor_type="person",
                       relations=[Relation("sister", "Anna", "person", False, "User", "person"),
                                  Relation("lives_in", "Trondheim", "place", True, "Anna", "person")]).id
    assert _current(engine, viewer, "Anna") == [("Anna", "lives_in", "Trondheim"), ("User", "sister", "Anna")]
    clock.advance(1000)
    engine.update(sid, doc, old_text="Trondheim", new_text="Bergen")
    # the old home is closed, not erased; the sister edge stands, since the text still names Anna
    assert _current(engine, viewer, "Anna") == [("Anna", "lives_in", "Bergen"), ("User", "sister", "Anna")]
    trondheim = next(a for a in engine.anchors(viewer) if a.name == "Trondheim")
    [old] = engine.edges(viewer, trondheim.id)
    assert not old.current and old.corrected  # a correction is no move: it never held
    anna = next(a for a in engine.anchors(viewer) if a.name == "Anna")
    said = old.valid_from + 500  # after it was said, before it was corrected
    # then too she lived in Bergen, as far as anyone knows: the corrected value takes the wrong one's time
    assert [e.to_name for e in engine.edges(viewer, anna.id, as_of=said) if e.relation == "lives_in"] == ["Bergen"]
    engine.revert(viewer, doc, 1)  # going back to the first text takes the graph back too
    assert _current(engine, viewer, "Anna") == [("Anna", "lives_in", "Trondheim"), ("User", "sister", "Anna")]


def _filed_under(engine, memory_id: str) -> str | None:
    with engine.db.snapshot() as conn:
        found = conn.execute("SELECT a.canonical_name FROM memory_documents d JOIN memory_anchors a"
                             " ON a.anchor_id = d.anchor_id WHERE d.document_id = ? UNION ALL"
                             " SELECT a.canonical_name FROM memory_records r JOIN memory_anchors a"
                             " ON a.anchor_id = r.anchor_id WHERE r.record_id = ?", (memory_id, memory_id)).fetchall()
    return found[0][0] if found else None


def test_a_memory_filed_under_a_place_it_no_longer_names_moves_with_the_correction(engine, me, clock):
    sid = engine.open_session("personal", "work")
    doc = engine.store(sid, "Home", "User lives in Lisbon.", anchor="Lisbon", anchor_type="place",
                       relations=[Relation("lives_in", "Lisbon", "place", True, "User", "person")]).id
    clock.advance(1000)
    engine.update(sid, doc, old_text="Lisbon", new_text="Porto")
    assert _filed_under(engine, doc) == "Porto"
    engine.revert(engine.viewer(me), doc, 1)  # back to the first text, back under Lisbon
    assert _filed_under(engine, doc) == "Lisbon"
    # a record moves too; a memory whose text still names its anchor, or a topic, stays
    rec = engine.store(sid, "Trip", "Flew to Oslo with Anna.", memory_class="evidence", anchor="Anna",
                       anchor_type="person").id
    assert _filed_under(engine, engine.update(sid, rec, old_text="Oslo", new_text="Rome").new_id) == "Anna"
    moved = engine.update(sid, engine.store(sid, "Job", "User works at Acme.", anchor="Acme",
                                            anchor_type="organisation", memory_class="evidence").id,
                          new_content="User works at Globex.").new_id
    assert _filed_under(engine, moved) == "Globex"
    topic = engine.store(sid, "Tea", "User drinks green tea.", anchor="green tea", anchor_type="topic").id
    engine.update(sid, topic, new_content="User drinks coffee in Lisbon.")
    assert _filed_under(engine, topic) == "green tea"


def test_a_rewritten_record_retires_what_it_no_longer_says_and_its_deletion_closes_the_rest(engine, me):
    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    rec = engine.store(sid, "Rent", "I owe rent to my landlord Olsen.", memory_class="evidence",
                       relations=[Relation("owes", "Olsen", "person", False, "User", "person"),
                                  Relation("landlord", "Olsen", "person", False, "User", "person")]).id
    assert _current(engine, viewer, "Olsen") == [("User", "landlord", "Olsen"), ("User", "owes", "Olsen")]
    new = engine.update(sid, rec, new_content="I have no debts.").new_id
    assert _current(engine, viewer, "Olsen") == []
    kept = engine.store(sid, "Work", "I work at Acme.", memory_class="evidence",
                        relations=[Relation("works_at", "Acme", "organisation", True, "User", "person")]).id
    newer = engine.update(sid, kept, new_content="I still work at Acme, now as a tester.").new_id
    assert _current(engine, viewer, "Acme") == [("User", "works_at", "Acme")]
    engine.update(sid, newer, delete=True)  # the superseding record took the edge over: it closes with it
    assert _current(engine, viewer, "Acme") == []
    assert new


def test_reverting_a_move_gives_the_old_home_back_unbroken(engine, me, clock):
    """A walk: "Anna moved to Porto." appended to "My sister Anna lives in Lisbon.", then reverted.
    Anna's page said "Corrected, never so: lives in Porto" and also "Previously lives in Lisbon,
    until today; replaced by Porto", beside a Lisbon edge asserted anew: the move never happened,
    so Lisbon held all along, one edge, never replaced."""
    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    doc = engine.store(sid, "", "My sister Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                       relations=[Relation("sister", "Anna", "person", False, "User", "person"),
                                  Relation("lives_in", "Lisbon", "place", True, "Anna", "person")]).id
    anna = next(a for a in engine.anchors(viewer) if a.name == "Anna")
    [lisbon] = [e for e in engine.edges(viewer, anna.id) if e.relation == "lives_in"]
    clock.advance(DAY_MS)
    engine.update(sid, doc, new_content="My sister Anna lives in Lisbon. Anna moved to Porto.")
    assert _current(engine, viewer, "Anna") == [("Anna", "lives_in", "Porto"), ("User", "sister", "Anna")]
    clock.advance(DAY_MS)
    engine.revert(viewer, doc, 1)
    homes = [e for e in engine.edges(viewer, anna.id) if e.relation == "lives_in"]
    assert {(e.to_name, e.current, e.corrected) for e in homes} == {("Lisbon", True, False), ("Porto", False, True)}
    [home] = [e for e in homes if e.current]
    assert (home.id, home.valid_from) == (lisbon.id, lisbon.valid_from)  # the same edge, unbroken
    day_of_the_move = clock() - DAY_MS - DAY_MS // 2
    assert [e.to_name for e in engine.edges(viewer, anna.id, as_of=day_of_the_move + DAY_MS // 4)
            if e.relation == "lives_in"] == ["Lisbon"]


def _pets(engine, viewer):
    user = next(a for a in engine.anchors(viewer) if a.name == "User")
    return sorted((e.to_name, e.current) for e in engine.edges(viewer, user.id) if e.relation == "pet")


def test_a_restored_tie_said_again_meanwhile_is_one_current_fact_that_outlives_either_memory(engine, me, clock):
    """A walk: "I have a dog named Rolo." deleted as wrong, "I keep a dog called Rolo!" said while it
    was, then the first restored: Rolo's page said "User pet Rolo" both current and "Previously …
    until today"; erasing the second memory then dropped the pet altogether, the first still live."""
    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    pet = [Relation("pet", "Rolo", "pet", False, "User", "person")]
    first = engine.store(sid, "", "I have a dog named Rolo.", relations=pet).id
    clock.advance(DAY_MS)
    engine.update(sid, first, delete=True)
    clock.advance(DAY_MS)
    second = engine.store(sid, "", "I keep a dog called Rolo!", relations=pet).id
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == first]
    engine.restore(tomb["tombstone_id"], token=me)
    assert _pets(engine, viewer) == [("Rolo", True)]  # once, current, nothing "previously"
    engine.update(sid, second, delete=True)
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == second]
    engine.erase(tomb["tombstone_id"], token=me)
    assert _pets(engine, viewer) == [("Rolo", True)]  # the restored memory still says it


def test_a_restored_pet_comes_back_beside_another_pet(engine, me, clock):
    """A tie of several values: a second pet said while the first was deleted takes no place of it."""
    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    rolo = engine.store(sid, "", "I have a dog named Rolo.",
                        relations=[Relation("pet", "Rolo", "pet", False, "User", "person")]).id
    engine.update(sid, rolo, delete=True)
    clock.advance(DAY_MS)
    engine.store(sid, "", "I have a cat named Mochi.", relations=[Relation("pet", "Mochi", "pet", False, "User", "person")])
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == rolo]
    engine.restore(tomb["tombstone_id"], token=me)
    assert _pets(engine, viewer) == [("Mochi", True), ("Rolo", True)]


def test_correcting_where_someone_moved_keeps_when_they_moved(engine, me, clock):
    """Porto corrected to Braga in "…lives in Lisbon. Anna moved to Porto.": she moved when it was said,
    to Braga; Lisbon ended then, not at the correction."""
    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    doc = engine.store(sid, "", "My sister Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                       relations=[Relation("lives_in", "Lisbon", "place", True, "Anna", "person")]).id
    clock.advance(DAY_MS)
    engine.update(sid, doc, new_content="My sister Anna lives in Lisbon. Anna moved to Porto.")
    moved = clock()
    clock.advance(DAY_MS)
    engine.update(sid, doc, old_text="Porto", new_text="Braga")
    anna = next(a for a in engine.anchors(viewer) if a.name == "Anna")
    homes = {e.to_name: e for e in engine.edges(viewer, anna.id) if e.relation == "lives_in"}
    assert homes["Braga"].current and homes["Porto"].corrected
    assert homes["Lisbon"].valid_to == moved and not homes["Lisbon"].corrected


def test_a_moves_target_corrected_then_reverted_is_one_edge_current_and_the_old_home_replaced_by_it(engine, me,
                                                                                                   clock):
    """A walk: "My sister Anna lives in Lisbon." and "Anna moved to Porto." written apart, the second
    rewritten to "…Madrid." and reverted: Anna's page said "lives in Porto" both current and
    "Corrected, never so", and before the revert that Lisbon was "replaced by Porto", never so."""
    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    engine.store(sid, "", "My sister Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Lisbon", "place", True, "Anna", "person")])
    clock.advance(DAY_MS)
    move = engine.store(sid, "", "Anna moved to Porto.", anchor="Anna", anchor_type="person",
                        relations=[Relation("lives_in", "Porto", "place", True, "Anna", "person")]).id
    moved = clock()
    anna = next(a for a in engine.anchors(viewer) if a.name == "Anna")

    def homes():
        return {(e.to_name, e.current, e.corrected, e.valid_from) for e in engine.edges(viewer, anna.id)
                if e.relation == "lives_in"}
    clock.advance(DAY_MS)
    engine.update(sid, move, new_content="Anna moved to Madrid.")
    lisbon = next(e for e in engine.edges(viewer, anna.id) if e.to_name == "Lisbon")
    assert lisbon.valid_to == moved and ("Madrid", True, False, moved) in homes()  # Lisbon replaced by Madrid
    clock.advance(DAY_MS)
    engine.revert(viewer, move, 1)
    found = homes()
    assert ("Porto", True, False, moved) in found and not any(n == "Porto" and c for n, _, c, _ in found)
    assert [n for n, current, _, _ in found if current] == ["Porto"]


def test_a_fact_a_newer_value_had_retired_is_never_so_once_its_memory_is_deleted_as_wrong(engine, me, clock):
    """A walk: Lisbon replaced by Porto, then "My sister Anna lives in Lisbon." deleted as wrong; the
    page still said "Previously lives in Lisbon … replaced by Porto" (only edges the deletion closed
    were never so)."""
    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    lisbon = engine.store(sid, "", "My sister Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                          relations=[Relation("lives_in", "Lisbon", "place", True, "Anna", "person")]).id
    clock.advance(DAY_MS)
    engine.store(sid, "", "Anna moved to Porto.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Porto", "place", True, "Anna", "person")])
    clock.advance(DAY_MS)
    engine.update(sid, lisbon, delete=True)
    anna = next(a for a in engine.anchors(viewer) if a.name == "Anna")
    [old] = [e for e in engine.edges(viewer, anna.id) if e.to_name == "Lisbon"]
    assert old.deleted_as_wrong and old.corrected
    assert [e.to_name for e in engine.edges(viewer, anna.id, as_of=clock() - DAY_MS - DAY_MS // 2)] == []
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == lisbon]
    engine.restore(tomb["tombstone_id"], token=me)
    [back] = [e for e in engine.edges(viewer, anna.id) if e.to_name == "Lisbon"]
    assert not back.deleted_as_wrong and not back.current  # held until Porto, as before


def test_a_spelling_fix_of_an_updated_document_does_not_reassert_what_its_earlier_part_said(engine, me, clock):
    """A walk: "User's sister Anna lives in Porto and User's brother Tom lives in Berlin.", then
    "My sister Ana moved to Madrid." appended on top; an agent's fix of the name re-read the
    earlier part, invented a place "Porto and User" and closed the newer Madrid."""
    from keepmind.engine.writepath.mergeguard import append_body

    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    first = "User's sister Anna lives in Porto and User's brother Tom lives in Berlin."
    doc = engine.store(sid, "", first, anchor="Anna", anchor_type="person",
                       relations=[Relation("sister", "Anna", "person", False, "User", "person"),
                                  Relation("lives_in", "Porto", "place", True, "Anna", "person"),
                                  Relation("brother", "Tom", "person", False, "User", "person"),
                                  Relation("lives_in", "Berlin", "place", True, "Tom", "person")]).id
    clock.advance(DAY_MS)
    engine.update(sid, doc, new_content=append_body(first, "User's sister Anna moved to Madrid.", clock() - DAY_MS))
    assert ("Anna", "lives_in", "Madrid") in _current(engine, viewer, "Anna")
    clock.advance(DAY_MS)
    body = engine.get(sid, [doc]).items[0].body
    engine.update(sid, doc, old_text="sister Anna moved", new_text="sister Ana moved")
    assert "sister Ana moved" in engine.get(sid, [doc]).items[0].body and body != engine.get(sid, [doc]).items[0].body
    places = {a.name for a in engine.anchors(viewer) if a.type == "place"}
    assert "Porto and User" not in places
    anna = next(a for a in engine.anchors(viewer) if a.name == "Anna")
    assert [e.to_name for e in engine.edges(viewer, anna.id) if e.relation == "lives_in" and e.current] == ["Madrid"]
    tom = next(a for a in engine.anchors(viewer) if a.name == "Tom")
    assert [e.to_name for e in engine.edges(viewer, tom.id) if e.relation == "lives_in" and e.current] == ["Berlin"]


def test_a_corrected_word_leaves_the_memorys_search_aliases_too(engine):
    # a walk: "I live in Porto" corrected to Madrid was still found by a search for Porto (its
    # alias "lives Porto wife" said it); a nickname the text never said stays an alias
    sid = engine.open_session("personal", "work")
    scope = engine.scope(sid)
    doc = engine.store(sid, "Home", "User lives in Porto with User's wife.", aliases=["lives Porto wife", "Tripeiro"]).id
    rec = engine.store(sid, "Trip", "Flew to Porto on 3 May.", memory_class="evidence", aliases=["Porto trip"]).id
    assert {m.id for m in engine.search_memories(scope, "Porto")} == {doc, rec}
    engine.update(sid, doc, old_text="Porto", new_text="Madrid")
    new_rec = engine.update(sid, rec, new_content="Flew to Madrid on 3 May.").new_id
    assert engine.memory(scope, doc).aliases == ("lives wife", "Tripeiro")
    assert engine.memory(scope, new_rec).aliases == ("trip",)
    assert engine.search_memories(scope, "Porto") == []
    assert [m.id for m in engine.search_memories(scope, "Tripeiro")] == [doc]


def test_a_duplicate_merged_into_another_memory_leaves_no_tombstone_and_loses_nothing(engine):
    """A walk had two memories of one fact and only "Delete as wrong": it tombstoned the true fact
    (the same wording was never learnt again)."""
    sid = engine.open_session("personal", "work")
    scope = engine.scope(sid)
    kept = engine.store(sid, "Coffee", "The user drinks oat-milk flat whites every morning.").id
    same = engine.store(sid, "Coffee again", "The user drinks oat-milk flat whites.").id
    more = engine.store(sid, "Coffee shop", "The user buys coffee at Kaffa on Rua Augusta.").id
    assert engine.merge_duplicate(scope, same, kept) == {"kept": kept, "appended": False, "revision": 1}
    assert engine.memory(scope, kept).body == "The user drinks oat-milk flat whites every morning."
    result = engine.merge_duplicate(scope, more, kept)  # says more: what it adds is kept
    assert result["appended"] and result["revision"] == 2
    assert engine.memory(scope, kept).body == ("The user drinks oat-milk flat whites every morning.\n\n"
                                               "The user buys coffee at Kaffa on Rua Augusta.")
    assert [m.id for m in engine.list_memories(sid)] == [kept]
    assert engine.deleted()[0] == []  # no tombstone: nothing was wrong
    assert engine.revisions(scope, kept)[0]["reason"] == f"merged {more}"
    # the fact may be learnt again: curation's tombstone rule does not refuse it
    from keepmind.engine import store as store_mod

    with engine.db.snapshot() as conn:
        assert not store_mod.is_tombstoned(conn, "The user drinks oat-milk flat whites.", "personal", "work")
    with pytest.raises(InvalidInput, match="cannot merge into itself"):
        engine.merge_duplicate(scope, kept, kept)
    rec = engine.store(sid, "Trip", "Flew to Lisbon on 3 May.", memory_class="evidence").id
    with pytest.raises(InvalidInput, match="is a record, which is never changed"):
        engine.merge_duplicate(scope, kept, rec)
    team = engine.store(engine.open_session("team", "work"), "Coffee", "The team drinks filter coffee.").id
    with pytest.raises(InvalidInput, match="different audiences or boundaries"):
        engine.merge_duplicate(engine.viewer(engine.create_token("all", "personal").token), team, kept)
