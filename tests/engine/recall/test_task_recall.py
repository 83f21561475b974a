"""Recall for what agents send: task messages that need a standing preference, and prompts about two
things at once, with the real offline model and the shipped calibration (issue 16's scenarios)."""

from dataclasses import replace

import pytest

from support.stores import FACTS, fill

pytestmark = pytest.mark.offline_model

WINDOW = "I always prefer a window seat when I fly."
COFFEE_AND_DOG = "What coffee should I get this afternoon? Also, I just adopted a greyhound named Pixel."


def _recall(engine, message):
    session = engine.open_session("personal", "work")
    result = engine.recall(session, message)
    return [i.id for i in result.items], engine.explain(result.receipt_id)


BERLIN_GAP = ("issue 16 bar not met: the seat preference ranks first (cosine 0.28 to the message, no shared word) but "
              "the gates, calibrated to refuse 0.90 of PrefEval questions whose topic the store lacks, refuse it: at "
              "cosine 0.28 this is the noise band of those questions (their best standing statement: median cosine "
              "0.29), and a store with fewer than three standing statements gives no reading of how far it stands "
              "above the others")


@pytest.mark.xfail(strict=True, reason=BERLIN_GAP)
def test_a_booking_task_gets_the_seat_preference_even_in_a_store_of_two(model_engine):
    sid = model_engine.open_session("personal", "work")
    pref = model_engine.store(sid, "", WINDOW).id
    model_engine.store(sid, "Dentist", "The user's dentist appointment is on 14 March at the Elm Street clinic.")
    injected, receipt = _recall(model_engine, "Book me a flight to Berlin next week.")
    assert receipt["mode"] == "hybrid" and injected == [pref]


@pytest.mark.xfail(strict=True, reason=BERLIN_GAP)
def test_a_booking_task_gets_the_seat_preference_among_other_memories(model_engine):
    sid = model_engine.open_session("personal", "work")
    fill(model_engine, sid)
    pref = model_engine.store(sid, "", WINDOW).id
    injected, _ = _recall(model_engine, "Book me a flight to Berlin next week.")
    assert pref in injected


def test_shipped_recall_gives_a_prompt_about_two_things_the_memory_of_the_one_the_store_knows(model_engine):
    sid = model_engine.open_session("personal", "work")
    ids = fill(model_engine, sid)
    coffee = ids[[t for t, _ in FACTS].index("Coffee")]
    injected, _ = _recall(model_engine, COFFEE_AND_DOG)
    assert coffee in injected


def test_with_message_parts_a_prompt_about_two_things_recalls_the_memory_of_the_one_the_store_knows(model_engine):
    shipped = model_engine.recaller.config
    model_engine.recaller.config = lambda: replace(shipped(), message_parts=True)
    sid = model_engine.open_session("personal", "work")
    ids = fill(model_engine, sid)
    coffee = ids[[t for t, _ in FACTS].index("Coffee")]
    injected, receipt = _recall(model_engine, COFFEE_AND_DOG)
    assert coffee in injected
    # it was matched against the coffee sentence, not the whole prompt
    [item] = [c for c in receipt["considered"] if c["id"] == coffee]
    assert "segment=1" in item["reasons"]


def test_the_seat_preference_ranks_first_for_the_booking_task(model_engine):
    sid = model_engine.open_session("personal", "work")
    fill(model_engine, sid)
    pref = model_engine.store(sid, "", WINDOW).id
    _, receipt = _recall(model_engine, "Book me a flight to Berlin next week.")
    first = receipt["considered"][0]
    assert first["id"] == pref and any(r.startswith("standing=") for r in first["reasons"])


def test_a_general_knowledge_question_injects_nothing(model_engine):
    sid = model_engine.open_session("personal", "work")
    fill(model_engine, sid)
    model_engine.store(sid, "", WINDOW)
    injected, receipt = _recall(model_engine, "what is the capital of Peru?")
    assert receipt["mode"] == "hybrid" and injected == []
