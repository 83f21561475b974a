"""Without an embedding model recall is lexical, deterministic, and says why."""

from engine.recall.pipeline import RecallConfig


def test_without_a_model_recall_is_lexical_and_deterministic(engine):
    sid = engine.open_session("personal", "work")
    for title, body in (("Coffee", "The user drinks flat whites."), ("Tea", "The user dislikes green tea."),
                        ("Trip", "The user flies to Lisbon in May.")):
        engine.store(sid, title, body)
    runs = [engine.recaller.trace(engine.scope(sid), "what coffee does the user drink?") for _ in range(3)]
    assert all(r.mode == "lexical" for r in runs)
    assert len({tuple(c.id for c in r.ranked) for r in runs}) == 1
    assert any(d.startswith("vector:") for d in runs[0].degraded)


def test_public_sessions_and_a_disabled_memory_recall_nothing(engine):
    pub = engine.open_session("public", "work")
    assert engine.recall(pub, "anything").block is None
    off = engine.recaller.trace(engine.scope(pub), "anything", config=RecallConfig())
    assert off.mode == "inert" and off.ranked == []


def test_bad_input_is_a_clear_error(engine):
    import pytest
    from engine.errors import InvalidInput, NotFound

    sid = engine.open_session("personal", "work")
    with pytest.raises(InvalidInput):
        engine.recall(sid, 42)
    with pytest.raises(InvalidInput):
        engine.recall(sid, "coffee", context=[1, 2])
    with pytest.raises(InvalidInput):
        engine.explain("not-a-receipt")
    with pytest.raises(NotFound):
        engine.explain("rcp-" + "0" * 32)


def test_without_a_model_the_shipped_lexical_gate_still_refuses_off_topic_messages(engine):
    sid = engine.open_session("personal", "work")
    for title, body in (("Coffee", "The user drinks flat whites every morning."),
                        ("Library", "The user volunteers at the town library on Saturdays."),
                        ("Trip", "The user flies to Lisbon in May.")):
        engine.store(sid, title, body)
    t = engine.recaller.trace(engine.scope(sid), "How are periodicals indexed in automated library systems?")
    assert t.mode == "lexical" and t.ranked, "the library memory matches lexically"
    assert t.gate_kind == "feature" and not any(d.startswith("gate:") for d in t.degraded)
    assert t.block is None
