"""Review while memory is paused: a kept proposal waits for the resume, and the page says so."""

from __future__ import annotations

import pytest

from support.pages import sign_in

HX = {"HX-Request": "true"}


@pytest.fixture
def engine(home, make_engine):
    return make_engine(home, memory__curation__review=True)


def test_keeping_a_proposal_while_paused_says_it_becomes_a_memory_on_resume(client, engine, clock):
    """A walk kept a proposal while paused and was told "Kept: curation forms the memory now.";
    nothing was formed until the resume."""
    sid = engine.open_session("personal", "work")
    engine.add_turn(sid, user="I'm allergic to peanuts.", assistant="Noted.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    [waiting] = engine.review_queue()
    csrf = sign_in(client, engine)
    engine.pause()
    r = client.post(f"/review/{waiting['checkpoint_id']}/keep", data={"csrf_token": csrf}, headers=HX)
    assert "Kept: it becomes a memory when memory is resumed" in r.get_data(as_text=True)
    engine.writepath.curation.drain(clock())
    assert engine.list_memories(sid) == []  # nothing new while paused
    engine.resume()
    engine.writepath.curation.drain(clock())
    assert [m.body for m in engine.list_memories(sid)] == ["I'm allergic to peanuts."]
