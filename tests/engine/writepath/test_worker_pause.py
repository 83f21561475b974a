"""While memory is paused the workers keep nothing new: curation leaves the queue as it is and asks
no model, the observer distils no further session; on resume the queue goes on."""

from keepmind.engine.db import one, scalar

CURATOR = "You curate a long-term memory"
OBSERVER = "You distil a conversation"


def _checkpoint(engine, checkpoint_id):
    with engine.db.snapshot() as conn:
        return one(conn, "SELECT status, attempts FROM memory_checkpoints WHERE checkpoint_id=?", (checkpoint_id,))


def _documents(engine):
    with engine.db.snapshot() as conn:
        return scalar(conn, "SELECT COUNT(*) FROM memory_documents")


def test_paused_curation_keeps_nothing_and_the_checkpoint_waits_for_resume(engine, clock):
    session = engine.open_session("personal", "work")
    queued = engine.store_memory(session, "Backups", "Backups run nightly at 02:00 UTC to the NAS.")
    engine.pause()
    assert engine.writepath.curation.run_once(clock()).status == "idle"
    assert engine.drain_checkpoints() == []
    assert _documents(engine) == 0
    assert _checkpoint(engine, queued.checkpoint_id) == {"status": "pending", "attempts": 0}
    engine.resume()
    [outcome] = engine.drain_checkpoints()
    assert outcome.status == "completed" and outcome.checkpoint_id == queued.checkpoint_id
    assert _checkpoint(engine, queued.checkpoint_id)["status"] == "completed" and _documents(engine) == 1


def test_paused_curation_asks_the_model_nothing(llm_engine, provider, clock):
    session = llm_engine.open_session("personal", "work")
    llm_engine.store_memory(session, "Laptop", "User's laptop is a ThinkPad X1 Carbon Gen 11.")
    llm_engine.drain_checkpoints()
    queued = llm_engine.store_memory(session, "Laptop", "User's laptop has 32 GB of RAM.")
    llm_engine.pause()
    assert llm_engine.writepath.curation.run_once(clock()).status == "idle"
    assert provider.calls(CURATOR) == []
    assert _checkpoint(llm_engine, queued.checkpoint_id)["status"] == "pending"
    llm_engine.resume()
    provider.script(CURATOR, "CREATE")
    outcome = llm_engine.writepath.curation.run_once(clock())
    assert outcome.status == "completed" and len(provider.calls(CURATOR)) == 1


def test_a_pause_while_the_curator_decides_keeps_nothing_and_hands_the_checkpoint_back(llm_engine, provider,
                                                                                     clock):
    session = llm_engine.open_session("personal", "work")
    llm_engine.store_memory(session, "Laptop", "User's laptop is a ThinkPad X1 Carbon Gen 11.")
    llm_engine.drain_checkpoints()
    body = llm_engine.list_memories(session)[0].body
    queued = llm_engine.store_memory(session, "Laptop", "User's laptop has 32 GB of RAM.")

    def pause_then_answer(request):  # the person pauses while the model is deciding
        llm_engine.pause()
        return "CREATE"

    provider.script(CURATOR, pause_then_answer)
    outcome = llm_engine.writepath.curation.run_once(clock())
    assert outcome.status == "idle" and len(provider.calls(CURATOR)) == 1
    assert [m.body for m in llm_engine.list_memories(session)] == [body]  # nothing new kept
    assert _checkpoint(llm_engine, queued.checkpoint_id) == {"status": "pending", "attempts": 0}
    llm_engine.resume()
    provider.script(CURATOR, "CREATE")
    assert llm_engine.writepath.curation.run_once(clock()).status == "completed"
    assert "32 GB" in "\n".join(m.body for m in llm_engine.list_memories(session))


def test_a_pause_during_an_observer_run_distils_no_further_session(llm_engine, provider, clock):
    first = llm_engine.open_session("personal", "work")
    second = llm_engine.open_session("personal", "work")
    llm_engine.add_turn(first, user="I prefer aisle seats.")
    llm_engine.add_turn(second, user="I'm a member of the Sierra Club.")
    clock.advance(90_000)

    def pause_then_answer(request):
        llm_engine.pause()
        return '{"proposals": []}'

    provider.script(OBSERVER, pause_then_answer, '{"proposals": []}')
    llm_engine.writepath.scheduler.run_once(clock())
    assert len(provider.calls(OBSERVER)) == 1  # the session after the pause was not asked about
    llm_engine.resume()
    assert len(llm_engine.writepath.scheduler.run_once(clock())) == 1  # the one left waits for resume
    assert len(provider.calls(OBSERVER)) == 2
