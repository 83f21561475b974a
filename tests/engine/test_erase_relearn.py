"""A claim deleted as wrong, or erased for good, is not learnt back from the conversation it was
said in, nor kept in the proposal that says it again.

A user walk found an erased "My dog is a beagle named Rolo." back about 90 s later: the agent had
stored it with store_memory (whose provenance names no turn), so the erase left the turn where the
user said it, and the observer's idle distillation learnt "Please remember that User's dog is a
beagle named Rolo." from it, which no fingerprint of the deleted wording matched. Refused again
after the erase, the repeat's proposal kept the text in its checkpoint, where nothing could blank it.
"""

from __future__ import annotations

import pytest

from keepmind.engine.writepath import extractor
from support.dbscan import in_the_files, occurrences
from support.provider import drain

WORDS = ("beagle", "rolo")


@pytest.fixture
def me(engine):
    return engine.create_token("me", "personal").token


def idle(engine, clock):
    """Let the observer's idle distillation run and curation take what it proposed."""
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    drain(engine)


def stored_by_the_agent(engine, clock, sid):
    """The user says it in a turn; the agent stores it with store_memory before the observer runs."""
    engine.add_turn(sid, user="Please remember that my dog is a beagle named Rolo.",
                    assistant="Noted: your dog Rolo is a beagle.")
    engine.store_memory(sid, "", "My dog is a beagle named Rolo.")
    drain(engine)
    [doc] = [m for m in engine.list_memories(sid) if "Rolo" in m.body]
    return doc


def dog_memories(engine, sid):
    return [m.body for m in engine.list_memories(sid) if "beagle" in m.body.lower()]


def test_a_request_to_remember_is_not_part_of_the_fact():
    [said] = extractor.extract([(0, "Please remember that my dog is a beagle named Rolo.")])
    assert said.content == "User's dog is a beagle named Rolo."
    [said] = extractor.extract([(0, "Remember: I am allergic to peanuts.")])
    assert said.content == "I am allergic to peanuts."
    assert extractor.extract([(0, "Remember when we went to Paris?")]) == []


def test_a_claim_deleted_as_wrong_is_not_learnt_back_from_its_conversation(engine, clock):
    sid = engine.open_session("personal", "work")
    doc = stored_by_the_agent(engine, clock, sid)
    engine.update(sid, doc.id, delete=True)
    idle(engine, clock)  # the observer reads the turn: "User's dog is…" is the deleted "My dog is…"
    assert dog_memories(engine, sid) == []


def test_an_erase_blanks_the_turns_that_said_it_and_the_observer_learns_nothing(engine, clock, me):
    sid = engine.open_session("personal", "work")
    engine.add_turn(sid, user="I play the cello on Mondays.", assistant="Nice.")  # another claim: kept
    doc = stored_by_the_agent(engine, clock, sid)
    engine.update(sid, doc.id, delete=True)
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == doc.id]
    result = engine.erase(tomb["tombstone_id"], token=me)
    assert result["turns"] == 1
    with engine.db.snapshot() as conn:
        turns = conn.execute("SELECT user_text FROM session_turns WHERE session_id=? ORDER BY turn_index",
                             (sid,)).fetchall()
    assert turns == [("I play the cello on Mondays.",), ("(erased)",)]
    idle(engine, clock)
    assert dog_memories(engine, sid) == []
    assert occurrences(engine.db.path, WORDS) == []
    assert [m.body for m in engine.list_memories(sid) if "cello" in m.body] == ["I play the cello on Mondays."]


def test_a_proposal_waiting_when_the_claim_is_erased_is_dropped_with_its_words(engine, clock, me):
    sid = engine.open_session("personal", "work")
    doc = stored_by_the_agent(engine, clock, sid)
    engine.update(sid, doc.id, delete=True)
    engine.store_memory(sid, "", "Rolo the beagle is my dog.")  # said again, queued, not curated yet
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == doc.id]
    engine.erase(tomb["tombstone_id"], token=me)
    drain(engine)
    assert dog_memories(engine, sid) == []
    assert occurrences(engine.db.path, WORDS) == []


def test_a_repeat_refused_after_the_erase_keeps_no_copy_of_it(engine, clock, me):
    sid = engine.open_session("personal", "work")
    doc = stored_by_the_agent(engine, clock, sid)
    engine.update(sid, doc.id, delete=True)
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == doc.id]
    engine.erase(tomb["tombstone_id"], token=me)
    assert occurrences(engine.db.path, WORDS) == []
    again = engine.open_session("personal", "work")
    queued = engine.store_memory(again, "", "My dog is a beagle named Rolo.")
    drain(engine)
    said = engine.checkpoint(queued.checkpoint_id)
    assert (said["action"], said["reason"]) == ("skip", "tombstone")
    assert said["reason_words"] == "refused: this claim was deleted as wrong"
    assert occurrences(engine.db.path, WORDS) == []  # its checkpoint was scrubbed, as a secret's is
    # and no old copy of its pages holds it: not the file's freed space, not the WAL
    assert in_the_files(engine.db.path, WORDS) == []


def test_an_erase_blanks_the_sentences_that_say_it_in_the_other_conversations_of_its_scope(engine, clock, me):
    sid = engine.open_session("personal", "work")
    doc = stored_by_the_agent(engine, clock, sid)
    other = engine.open_session("personal", "work")  # said again elsewhere, with another fact
    engine.add_turn(other, user="My dog is a beagle named Rolo. Also, I play the cello on Mondays.", assistant="Got it.")
    elsewhere = engine.open_session("personal", "home")  # another boundary: not this memory's scope
    engine.add_turn(elsewhere, user="My dog is a beagle named Rolo.", assistant="Ok.")
    engine.update(sid, doc.id, delete=True)
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == doc.id]
    assert engine.erase(tomb["tombstone_id"], token=me)["turns"] == 2
    with engine.db.snapshot() as conn:
        said = dict(conn.execute("SELECT session_id, user_text FROM session_turns WHERE session_id IN (?, ?)",
                                 (other, elsewhere)).fetchall())
    assert said == {other: "(erased) Also, I play the cello on Mondays.", elsewhere: "My dog is a beagle named Rolo."}
    idle(engine, clock)
    assert dog_memories(engine, other) == []
    assert [m.body for m in engine.list_memories(other) if "cello" in m.body]  # the other fact is learnt


def test_a_proposal_of_another_session_waiting_in_review_is_dropped_by_the_erase(make_engine, tmp_path, clock):
    engine = make_engine(tmp_path / "reviewing", memory__curation__review=True)
    me = engine.create_token("me", "personal").token
    sid = engine.open_session("personal", "work")
    doc = stored_by_the_agent(engine, clock, sid)
    other = engine.open_session("personal", "work")
    engine.add_turn(other, user="My dog is a beagle named Rolo.", assistant="Ok.")
    idle(engine, clock)  # the observer's proposal waits for review
    engine.update(sid, doc.id, delete=True)
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == doc.id]
    engine.erase(tomb["tombstone_id"], token=me)
    assert engine.checkpoint_overview()["counts"].get("review", 0) == 0
    assert occurrences(engine.db.path, WORDS) == []


def test_a_deleted_claim_said_with_more_words_is_not_learnt_back(engine, clock):
    sid = engine.open_session("personal", "work")
    doc = stored_by_the_agent(engine, clock, sid)
    engine.update(sid, doc.id, delete=True)
    engine.add_turn(sid, user="Yes, my dog is a beagle named Rolo, he is 3.", assistant="Nice.")
    idle(engine, clock)  # "User's dog is a beagle named Rolo, he is 3." says the deleted claim
    assert dog_memories(engine, sid) == []
    engine.add_turn(sid, user="My dog is not a beagle named Rolo.", assistant="Noted.")  # its correction
    idle(engine, clock)
    assert dog_memories(engine, sid) == ["User's dog is not a beagle named Rolo."]


def test_the_planners_samples_of_an_erased_name_are_taken_again(engine, clock, me):
    """`PRAGMA optimize` samples index rows into sqlite_stat4: an erased pet's name was one of them."""
    sid = engine.open_session("personal", "work")
    doc = stored_by_the_agent(engine, clock, sid)
    engine.write(lambda conn: conn.execute("ANALYZE"))  # as PRAGMA optimize does on a store that grew
    assert any(table.startswith("sqlite_stat") for table, _ in occurrences(engine.db.path, WORDS))
    engine.update(sid, doc.id, delete=True)
    [tomb] = [t for t in engine.deleted(token=me)[0] if t["memory_id"] == doc.id]
    engine.erase(tomb["tombstone_id"], token=me)
    assert occurrences(engine.db.path, WORDS) == []
