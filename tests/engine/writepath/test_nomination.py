"""Nomination with the real offline embedder: cosine >= 0.86 nominates, the curator decides."""

import pytest

from keepmind.engine import open_engine
from keepmind.engine.settings import defaults
from support.provider import drain, llm_settings

CURATOR = "You curate a long-term memory"
LAPTOP = "User's laptop is a ThinkPad X1 Carbon Gen 11 with 32 GB of RAM."
LAPTOP_AGAIN = "The user's laptop is a ThinkPad X1 Carbon Gen 11, with 32 GB RAM."


def _open(home, clock, settings):
    engine = open_engine(home, settings=settings.with_overrides(memory__embeddings__auto_download=False,
                                                                 memory__recall__gate__enabled=False),
                         clock=clock, start_workers=False)
    engine.models.load()
    assert engine.models.embedder() is not None, engine.models.status_reasons()
    return engine


@pytest.mark.offline_model
def test_near_duplicate_is_nominated_and_the_curator_merges_it(offline_models_home, clock, provider):
    engine = _open(offline_models_home, clock, llm_settings(provider))
    try:
        session = engine.open_session("personal", "work")
        existing = engine.store(session, "Laptop", LAPTOP).id  # embedded on write
        other = engine.store(session, "Coffee", "User drinks oat-milk flat whites every morning.").id
        assert engine.models.vectors().has(existing) and engine.models.vectors().has(other)
        merged = "User's laptop, their work machine, is a ThinkPad X1 Carbon Gen 11 with 32 GB of RAM."
        provider.script(CURATOR, f"UPDATE {existing}\n---\n{merged}")
        engine.store_memory(session, "Work machine", LAPTOP_AGAIN)  # cosine ~0.89 with the existing one
        [outcome] = drain(engine)
        assert (outcome.action, outcome.memory_ids) == ("update", (existing,))
        [call] = provider.calls(CURATOR)
        prompt = call["messages"][1]["content"]
        assert existing in prompt and other not in prompt
        assert engine.get(session, [existing]).items[0].body == merged
        # a different fact has no nominee: created without asking the model
        engine.store_memory(session, "Standup", "The team standup is at 09:30 on weekdays.")
        [created] = drain(engine)
        assert (created.action, created.reason) == ("create", "no_nominee")
        assert len(provider.calls(CURATOR)) == 1
    finally:
        engine.close()


@pytest.mark.offline_model
def test_without_llm_a_nominee_never_causes_a_merge(offline_models_home, clock):
    engine = _open(offline_models_home, clock, defaults())
    try:
        session = engine.open_session("personal", "work")
        existing = engine.store(session, "Laptop", LAPTOP).id
        engine.store_memory(session, "Work machine", LAPTOP_AGAIN)
        [outcome] = drain(engine)
        assert (outcome.action, outcome.reason) == ("create", "no_llm_nominee_create")
        assert engine.get(session, [existing]).items[0].body == LAPTOP
        from keepmind.engine.writepath.events import events_for

        with engine.db.snapshot() as conn:
            [event] = events_for(conn, outcome.checkpoint_id)
        assert event["detail"]["nominated_by"] == "vector" and event["detail"]["top_cosine"] >= 0.86
    finally:
        engine.close()


@pytest.mark.offline_model
def test_a_reworded_claim_that_was_deleted_as_wrong_stays_deleted(offline_models_home, clock):
    engine = _open(offline_models_home, clock, defaults())
    try:
        session = engine.open_session("personal", "work")
        wrong = engine.store(session, "Coffee", "User drinks oat-milk flat whites every morning.").id
        engine.update(session, wrong, delete=True, reason="wrong: the user does not drink coffee")
        engine.store_memory(session, "Coffee", "Every morning the user drinks an oat milk flat white.")
        engine.store_memory(session, "Tea", "User drinks green tea in the afternoon.")
        reworded, other = drain(engine)
        assert (reworded.action, reworded.reason) == ("skip", "tombstone")
        from keepmind.engine.writepath.events import events_for

        with engine.db.snapshot() as conn:
            [event] = events_for(conn, reworded.checkpoint_id)
        assert event["targets"] == [wrong] and event["detail"]["tombstone_cosine"] >= 0.9
        assert other.action == "create"  # a different drink is not refused
    finally:
        engine.close()


@pytest.mark.offline_model
def test_the_correction_of_a_fact_deleted_as_wrong_is_kept_though_it_is_worded_alike(offline_models_home, clock):
    """Delete the wrong date, store the right one: the obvious way to correct a memory."""
    engine = _open(offline_models_home, clock, defaults())
    try:
        session = engine.open_session("personal", "work")
        wrong = engine.store(session, "Dentist", "My dentist appointment is on 3 May 2027 at 10:00 with Dr. Weber.").id
        engine.update(session, wrong, delete=True)
        engine.store_memory(session, "Dentist", "My dentist appointment is on 17 June 2027 at 14:30 with Dr. Weber.")
        engine.store_memory(session, "Dentist", "My dentist appointment with Dr. Weber is on 3 May 2027 at 10:00.")
        corrected, again = drain(engine)
        assert corrected.action == "create"
        assert (again.action, again.reason) == ("skip", "tombstone")  # the wrong one, reworded, stays deleted
        assert [m.body for m in engine.list_memories(session)] == [
            "My dentist appointment is on 17 June 2027 at 14:30 with Dr. Weber."]
    finally:
        engine.close()


@pytest.mark.offline_model
def test_the_negation_of_a_claim_deleted_as_wrong_is_its_correction_not_the_claim_again(offline_models_home, clock):
    """"I am not allergic to peanuts." after "I am allergic to peanuts." was deleted as wrong: the
    two are worded alike (cosine 0.96), and the second is what the person wants kept."""
    engine = _open(offline_models_home, clock, defaults())
    try:
        session = engine.open_session("personal", "work")
        wrong = engine.store(session, "Allergy", "I am allergic to peanuts.").id
        engine.update(session, wrong, delete=True)
        engine.store_memory(session, "Allergy", "I am not allergic to peanuts.")
        engine.store_memory(session, "Allergy", "I'm allergic to peanuts!")  # the wrong claim again, reworded
        corrected, again = drain(engine)
        assert corrected.action == "create", corrected
        assert (again.action, again.reason) == ("skip", "tombstone")
        assert [m.body for m in engine.list_memories(session)] == ["I am not allergic to peanuts."]
    finally:
        engine.close()


@pytest.mark.offline_model
def test_a_created_memory_keeps_the_vector_curation_computed_and_is_not_embedded_twice(offline_models_home, clock):
    engine = _open(offline_models_home, clock, defaults())
    try:
        session = engine.open_session("personal", "work")
        embedder = engine.models.embedder()
        calls = []
        original = embedder.embed_passages
        embedder.embed_passages = lambda texts: calls.append(list(texts)) or original(texts)
        engine.store_memory(session, "Laptop", LAPTOP)
        engine.store_memory(session, "Laptop", LAPTOP)  # an exact duplicate: the rules settle it, no embedding
        [created, duplicate] = drain(engine)
        assert created.action == "create" and (duplicate.action, duplicate.reason) == ("skip", "duplicate")
        assert len(calls) == 1  # the proposal's vector became the memory's
        (memory_id,) = created.memory_ids
        vector = engine.models.vectors().vector(memory_id)
        assert vector is not None and abs(float(vector @ original([f"Laptop\n{LAPTOP}"])[0]) - 1.0) < 1e-5
    finally:
        engine.close()
