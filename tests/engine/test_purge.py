"""Erase for good: a memory deleted as wrong leaves no word of its text anywhere in the database,
its tombstone still refuses the claim, it cannot be restored, and nothing else is touched."""

from __future__ import annotations

import apsw
import pytest

from keepmind.engine import InvalidInput, NotFound, Relation
from support.dbscan import in_the_files, occurrences

WORDS = ("quokka", "wombat")  # the wrong text said "zanzibarquokka", its correction "zanzibarwombat"


def learnt(engine, clock, session, text):
    """Say `text` in a session and let the real write path (observer, curation) learn from it."""
    from support.provider import drain

    engine.add_turn(session, user=text, assistant="Noted.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    drain(engine)


@pytest.fixture
def me(engine):
    return engine.create_token("me", "personal").token


@pytest.fixture
def erased(engine, clock, me):
    """A memory learnt from a session, corrected once, recalled, deleted as wrong and erased; and
    another memory, said in its own session, that must stay as it was."""
    other = engine.open_session("personal", "work")
    learnt(engine, clock, other, "I play the cello on Mondays.")
    [kept] = [m for m in engine.list_memories(other) if "cello" in m.body]
    sid = engine.open_session("personal", "work")
    learnt(engine, clock, sid, "I play the zanzibarquokka on Tuesdays.")
    [doc] = [m for m in engine.list_memories(sid) if "zanzibarquokka" in m.body]
    engine.update(sid, doc.id, old_text="zanzibarquokka", new_text="zanzibarwombat")
    engine.recall(sid, "what do I play on Tuesdays, the zanzibarwombat?")
    assert occurrences(engine.db.path, WORDS)  # the words are there before: the scan can find them
    engine.update(sid, doc.id, delete=True, source="ui")
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == doc.id]
    result = engine.erase(tomb["tombstone_id"], token=me)
    return {"sid": sid, "doc": doc, "kept": kept, "tomb": tomb, "result": result, "other": other}


def test_an_erased_memory_leaves_no_word_of_its_text_in_any_table(engine, erased):
    assert occurrences(engine.db.path, WORDS) == []
    result = erased["result"]
    assert result["scrubbed"] and in_the_files(engine.db.path, WORDS) == []
    assert result["revisions"] == 2 and result["turns"] >= 1 and result["checkpoints"] >= 1
    with engine.db.snapshot() as conn:
        for fts in ("memory_documents_fts", "memory_records_fts"):
            for word in ("zanzibarquokka", "zanzibarwombat", "Tuesdays"):
                hits = conn.execute(f"SELECT rowid FROM {fts} WHERE {fts} MATCH ?", (f'"{word}"',)).fetchall()
                assert hits == [], (fts, word)
        # the turn it was learnt from is there still, as a marker: counts and order stay
        turns = conn.execute("SELECT user_text FROM session_turns WHERE session_id=?", (erased["sid"],)).fetchall()
        assert turns == [("(erased)",)]
        fingerprint = conn.execute("SELECT fingerprint, erased_at FROM tombstones WHERE tombstone_id=?",
                                   (erased["tomb"]["tombstone_id"],)).fetchone()
    assert fingerprint[0] and fingerprint[1] is not None
    assert engine.find(erased["sid"], "zanzibarwombat") == []


def test_the_deleted_page_says_erased_and_restore_is_refused(engine, erased, me):
    [row] = [t for t in engine.deleted(token=me)[0] if t["tombstone_id"] == erased["tomb"]["tombstone_id"]]
    assert row["erased_at"] is not None and row["title"] is None and row["body"] is None
    with pytest.raises(InvalidInput, match="erased for good: nothing left to restore"):
        engine.restore(erased["tomb"]["tombstone_id"], token=me)
    with pytest.raises(InvalidInput, match="erased for good already"):
        engine.erase(erased["tomb"]["tombstone_id"], token=me)


def test_the_same_statement_said_again_is_still_not_learnt(engine, erased, clock):
    sid = engine.open_session("personal", "work")
    learnt(engine, clock, sid, "I play the zanzibarwombat on Tuesdays.")  # what it said when deleted
    assert [m for m in engine.list_memories(sid) if "zanzibar" in m.body] == []
    assert engine.store(sid, "Tuesdays", "I play the zanzibarwombat on Tuesdays.").action == "tombstoned"


def test_another_memory_is_untouched(engine, erased):
    kept = erased["kept"]
    after = engine.get(erased["other"], [kept.id]).items[0]
    assert (after.title, after.body) == (kept.title, kept.body)
    with engine.db.snapshot() as conn:
        [(text,)] = conn.execute("SELECT user_text FROM session_turns WHERE session_id=?", (erased["other"],))
    assert text == "I play the cello on Mondays."
    assert [m.id for m in engine.find(erased["other"], "cello")] == [kept.id]


def test_a_token_of_another_scope_cannot_erase_nor_a_live_memory_be_erased(engine, me):
    sid = engine.open_session("personal", "home")
    doc = engine.store(sid, "Pin", "My bank card hint is the zanzibarquokka.").id
    engine.update(sid, doc, delete=True, source="ui")
    [tomb] = engine.deleted(token=me)[0]
    team = engine.create_token("team-only", "team").token
    elsewhere = engine.create_token("work-only", "personal", ["work"]).token
    for token in (team, elsewhere):
        with pytest.raises(NotFound):
            engine.erase(tomb["tombstone_id"], token=token)
    assert engine.deleted(token=me)[0][0]["body"] == "My bank card hint is the zanzibarquokka."
    engine.restore(tomb["tombstone_id"], token=me)  # a live memory has no tombstone to erase by
    with pytest.raises(NotFound):
        engine.erase(tomb["tombstone_id"], token=me)


def test_an_erased_record_chain_and_the_graph_only_it_named_are_gone(engine, me):
    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    kept = engine.store(sid, "Friend", "My friend Olsen likes chess.", memory_class="evidence",
                        relations=[Relation("friend", "Olsen", "person", False, "User", "person")]).id
    rec = engine.store(sid, "Quokka", "My friend Zanzibarquokka owes me money.", memory_class="evidence",
                       relations=[Relation("owes", "Zanzibarquokka", "person", False, "User", "person")]).id
    newer = engine.update(sid, rec, new_content="My friend Zanzibarquokka owes me 500 wombat coins.").new_id
    engine.update(sid, newer, delete=True, source="ui")
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == newer]
    result = engine.erase(tomb["tombstone_id"], token=me)
    assert result["records"] == 3 and result["anchors"] >= 1
    assert occurrences(engine.db.path, WORDS) == [] and in_the_files(engine.db.path, WORDS) == []
    assert {a.name for a in engine.anchors(viewer)} >= {"Olsen", "User"}  # what others name stays
    assert engine.get(sid, [kept]).items[0].body == "My friend Olsen likes chess."
    # the append-only guard lets an erase through and nothing else: not a rewrite, nor one dressed as an erase
    conn = apsw.Connection(str(engine.db.path))
    try:
        for sql in ("UPDATE memory_records SET body='changed' WHERE record_id=?",
                    "UPDATE memory_records SET erased_at=1, title='(erased)', body='(erased)', aliases='',"
                    " facets='', source='forged' WHERE record_id=?"):
            with pytest.raises(apsw.ConstraintError, match="append-only"):
                conn.execute(sql, (kept,))
    finally:
        conn.close()


def test_an_export_after_an_erase_carries_no_text_and_the_copy_still_refuses_restore_and_the_claim(
        engine, me, make_engine, tmp_path):
    from keepmind.engine import transfer

    sid = engine.open_session("personal", "work")
    rec = engine.store(sid, "Quokka", "My friend Zanzibarquokka owes me money.", memory_class="evidence").id
    doc = engine.store(sid, "Wombat", "The zanzibarwombat lives in my garden.").id
    for memory in (rec, doc):
        engine.update(sid, memory, delete=True, source="ui")
    for tomb in engine.deleted(token=me)[0]:
        engine.erase(tomb["tombstone_id"], token=me)
    out = tmp_path / "export.jsonl"
    transfer.export(engine, out)
    assert not any(w in out.read_text().lower() for w in WORDS)
    copy = make_engine()
    assert transfer.import_path(copy, out)["errors"] == []
    [first, second] = copy.deleted()[0]
    assert first["erased_at"] is not None and second["erased_at"] is not None
    with pytest.raises(InvalidInput, match="nothing left to restore"):
        copy.restore(first["tombstone_id"])
    there = copy.open_session("personal", "work")
    assert copy.store(there, "Wombat", "The zanzibarwombat lives in my garden.").action == "tombstoned"


def test_a_proposal_rejected_in_review_can_be_erased_with_its_repeat(make_engine, clock):
    from support.provider import drain

    reviewing = make_engine(memory__curation__review=True)
    sid = reviewing.open_session("personal", "work")
    learnt(reviewing, clock, sid, "I usually fly out of Boston Logan.")
    [waiting] = reviewing.review_queue()
    reviewing.reject_proposal(waiting["checkpoint_id"])
    again = reviewing.open_session("personal", "work")  # said again: refused by the tombstone
    learnt(reviewing, clock, again, "I usually fly out of Boston Logan.")
    drain(reviewing)
    assert reviewing.list_memories(again) == []
    [tomb] = reviewing.deleted()[0]
    reviewing.erase(tomb["tombstone_id"])
    assert occurrences(reviewing.db.path, ("logan",)) == []
    assert in_the_files(reviewing.db.path, ("logan",)) == []
    with pytest.raises(InvalidInput, match="nothing left to restore"):
        reviewing.restore(tomb["tombstone_id"])


def test_an_export_made_before_an_erase_imports_all_but_what_was_erased(engine, me, tmp_path):
    from keepmind.engine import exchange, transfer

    sid = engine.open_session("personal", "work")
    viewer = engine.viewer(me)
    engine.store(sid, "Friend", "My friend Olsen likes chess.",
                 relations=[Relation("friend", "Olsen", "person", False, "User", "person")])
    doc = engine.store(sid, "Pet", "My pet Zanzibarquokka sleeps all day.",
                       relations=[Relation("pet", "Zanzibarquokka", "pet", False, "User", "person")]).id
    engine.update(sid, doc, old_text="sleeps all day", new_text="sleeps in the zanzibarwombat")
    rec = engine.store(sid, "Trip", "I flew to Zanzibarquokka island in May.", memory_class="evidence").id
    before = tmp_path / "before.jsonl"
    transfer.export(engine, before)
    for memory in (doc, rec):
        engine.update(sid, memory, delete=True, source="ui")
    for tomb in engine.deleted(token=me)[0]:
        engine.erase(tomb["tombstone_id"], token=me)

    report = transfer.import_path(engine, before)
    assert (report["errors"], report["skipped"], report["erased"]) == ([], 1, 2), report
    assert occurrences(engine.db.path, WORDS) == []  # not its text, revisions, edge nor the anchor it named
    assert "Zanzibarquokka" not in {a.name for a in engine.anchors(viewer)}
    assert "Olsen" in {a.name for a in engine.anchors(viewer)}
    assert exchange.summary({**report, "format": "jsonl"})["not_imported"]["erased for good here"] == 2


def test_the_recall_made_for_the_turn_it_was_learnt_from_loses_its_message_too(engine, clock, me):
    """Recall runs before a turn is stored, before the memory exists: its receipt never named the
    memory, and a walk's erased "I hate cilantro…" stayed on the Recalls list and the Overview."""
    sid = engine.open_session("personal", "work")
    said = "I hate zanzibarcilantro, it tastes like soap to me."
    receipt = engine.recall(sid, said).receipt_id
    unrelated = engine.recall(sid, "What is the capital of Peru?").receipt_id
    learnt(engine, clock, sid, said)
    [doc] = [m for m in engine.list_memories(sid) if "zanzibarcilantro" in m.body]
    engine.update(sid, doc.id, delete=True, source="ui")
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == doc.id]
    result = engine.erase(tomb["tombstone_id"], token=me)
    assert result["receipts"] >= 1
    with engine.db.snapshot() as conn:
        queries = dict(conn.execute("SELECT receipt_id, query FROM recall_events").fetchall())
    assert queries[receipt] == "(erased)" and queries[unrelated] == "What is the capital of Peru?"
    assert occurrences(engine.db.path, ("zanzibarcilantro",)) == []
