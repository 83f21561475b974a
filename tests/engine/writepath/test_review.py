"""Review before keeping: observed proposals wait for a person; kept, edited or rejected; the
backlog, discard and retry as a person drives them."""

import pytest

from keepmind.engine import InvalidInput, NotFound
from support.provider import drain


@pytest.fixture
def reviewing(make_engine):
    return make_engine(memory__curation__review=True)


def observe(engine, session, clock, *turns):
    for user in turns:
        engine.add_turn(session, user=user, assistant="Noted.")
    clock.advance(90_000)
    [run] = engine.writepath.scheduler.run_once(clock())
    return run


def test_observed_proposals_wait_for_review_and_curation_leaves_them(reviewing, clock):
    sid = reviewing.open_session("personal", "work")
    run = observe(reviewing, sid, clock, "I usually fly out of Boston Logan.")
    assert len(run.checkpoint_ids) == 1
    assert drain(reviewing) == []  # nothing for curation: it waits for a person
    [waiting] = reviewing.review_queue()
    assert waiting["content"] == "User usually flies out of Boston Logan." and waiting["session_id"] == sid
    assert reviewing.backlog()["counts"]["review"] == 1 and reviewing.list_memories(sid) == []


def test_explicit_store_memory_never_waits(reviewing):
    sid = reviewing.open_session("personal", "work")
    reviewing.store_memory(sid, "Editor", "The user edits in Helix.")
    assert reviewing.review_queue() == []
    drain(reviewing)
    assert [m.body for m in reviewing.list_memories(sid)] == ["The user edits in Helix."]


def test_an_edited_then_kept_proposal_becomes_the_memory_as_edited(reviewing, clock):
    sid = reviewing.open_session("personal", "work")
    observe(reviewing, sid, clock, "I usually fly out of Boston Logan.")
    [waiting] = reviewing.review_queue()
    kept = reviewing.keep_proposal(waiting["checkpoint_id"], title="Home airport",
                                   content="User flies out of Boston Logan, terminal B.")
    assert kept["edited"] is True and reviewing.review_queue() == []
    [outcome] = drain(reviewing)
    assert outcome.action == "create"
    [memory] = reviewing.list_memories(sid)
    assert (memory.title, memory.body) == ("Home airport", "User flies out of Boston Logan, terminal B.")
    assert any(e["action"] == "kept" for e in reviewing.curation_events(limit=10))


def test_text_edited_under_its_own_opening_as_the_title_is_retitled_with_it(reviewing, clock):
    sid = reviewing.open_session("personal", "work")
    observe(reviewing, sid, clock, "I usually fly out of Boston Logan.")
    [waiting] = reviewing.review_queue()
    title = waiting["title"]
    assert title == waiting["content"] == "User usually flies out of Boston Logan."
    # what the Review form sends back: the title as shown, the text edited
    reviewing.keep_proposal(waiting["checkpoint_id"], title=title, content="User flies out of Boston Logan, terminal B.")
    drain(reviewing)
    [memory] = reviewing.list_memories(sid)
    assert (memory.title, memory.body) == ("User flies out of Boston Logan, terminal B.",
                                           "User flies out of Boston Logan, terminal B.")


def test_a_rejected_proposal_is_not_proposed_again(reviewing, clock):
    sid = reviewing.open_session("personal", "work")
    observe(reviewing, sid, clock, "I usually fly out of Boston Logan.")
    [waiting] = reviewing.review_queue()
    reviewing.reject_proposal(waiting["checkpoint_id"])
    assert reviewing.review_queue() == [] and reviewing.backlog()["counts"]["discarded"] == 1
    other = reviewing.open_session("personal", "work")  # the same claim, another day
    observe(reviewing, other, clock, "I usually fly out of Boston Logan.")
    assert reviewing.review_queue() == []  # it does not wait again
    drain(reviewing)
    assert reviewing.list_memories(other) == []
    assert any(e["action"] == "skip" and e["reason"] == "tombstone" for e in reviewing.curation_events(limit=10))


def test_restoring_a_rejected_proposal_puts_it_back_in_review(reviewing, clock):
    sid = reviewing.open_session("personal", "work")
    observe(reviewing, sid, clock, "I usually fly out of Boston Logan.")
    [waiting] = reviewing.review_queue()
    reviewing.reject_proposal(waiting["checkpoint_id"])
    tombstones, _ = reviewing.deleted()
    assert tombstones[0]["title"] and tombstones[0]["source"] == "review"
    assert reviewing.restore(tombstones[0]["tombstone_id"]) == waiting["checkpoint_id"]
    assert [w["checkpoint_id"] for w in reviewing.review_queue()] == [waiting["checkpoint_id"]]


def test_a_kept_proposal_with_a_secret_is_refused(reviewing, clock):
    sid = reviewing.open_session("personal", "work")
    observe(reviewing, sid, clock, "I usually fly out of Boston Logan.")
    [waiting] = reviewing.review_queue()
    with pytest.raises(Exception) as info:
        reviewing.keep_proposal(waiting["checkpoint_id"], content="my key is sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2)
    assert "secret" in str(info.value)
    assert len(reviewing.review_queue()) == 1  # still waiting, unchanged


def test_a_team_token_cannot_review_a_personal_proposal(reviewing, clock):
    sid = reviewing.open_session("personal", "work")
    observe(reviewing, sid, clock, "I usually fly out of Boston Logan.")
    [waiting] = reviewing.review_queue()
    team = reviewing.create_token("team-work", "team", ["work"]).token
    assert reviewing.review_queue(token=team) == []
    with pytest.raises(NotFound):
        reviewing.reject_proposal(waiting["checkpoint_id"], token=team)


def test_discard_drops_a_waiting_checkpoint_and_the_backlog_counts_it(engine):
    sid = engine.open_session("personal", "work")
    queued = engine.store_memory(sid, "Editor", "The user edits in Helix.")
    assert engine.backlog()["counts"]["pending"] == 1 and engine.backlog()["active"]
    engine.discard_checkpoint(queued.checkpoint_id)
    found = engine.backlog()
    assert found["counts"]["pending"] == 0 and found["counts"]["discarded"] == 1 and not found["active"]
    assert found["sections"]["discarded"][0]["kind"] == "store_memory"
    assert drain(engine) == [] and engine.list_memories(sid) == []
    with pytest.raises(InvalidInput):
        engine.discard_checkpoint(queued.checkpoint_id)  # already discarded


def test_the_backlog_shows_a_failed_checkpoints_error_and_retry_tries_it_now(engine, clock, monkeypatch):
    sid = engine.open_session("personal", "work", title="Trip")
    queued = engine.store_memory(sid, "Editor", "The user edits in Helix.")
    from keepmind.engine.writepath import curation

    def broken(*a, **kw):
        raise curation.TransientFailure("curator LLM connect: refused")

    monkeypatch.setattr(curation, "plan", broken)
    [outcome] = drain(engine)
    assert outcome.status == "retry"
    [failed] = engine.backlog()["sections"]["failed"]
    assert failed["last_error"] == "curator LLM connect: refused" and failed["session_title"] == "Trip"
    assert failed["available_at"] > clock() and failed["title"] == "Editor"
    assert drain(engine) == []  # backing off
    monkeypatch.undo()
    engine.retry_checkpoint(queued.checkpoint_id)
    [outcome] = drain(engine)
    assert outcome.status == "completed" and engine.backlog()["counts"]["completed"] == 1


def test_proposals_of_one_run_wait_in_the_order_they_were_said(reviewing, clock):
    """Oldest first, as the page says: a health statement is more confident than a habit, but the
    habit was said first (the queue is also the order curation takes them in)."""
    sid = reviewing.open_session("personal", "work")
    observe(reviewing, sid, clock, "I play the cello on Tuesdays.", "I'm allergic to shellfish.")
    assert [w["content"] for w in reviewing.review_queue()] == ["I play the cello on Tuesdays.",
                                                                "I'm allergic to shellfish."]
