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


def test_without_a_model_there_is_no_gate_and_recall_says_it_is_degraded(engine):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Home airport", "The user's home airport is Boston Logan; flights depart from Boston.")
    engine.store(sid, "Pasta", "The user cooks pasta on Sundays.")
    result = engine.recall(sid, "I need a flight from Boston to Chicago next Friday.")
    assert [i.title for i in result.items] == ["Home airport"]
    assert "vector:embedder_unavailable" in result.degraded
    assert "gate:no_scorer_configured" in result.degraded


def test_starting_the_recaller_counts_the_stores_words_once(engine):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Coffee", "The user drinks flat whites.")
    assert not engine.recaller.stats.built
    engine.recaller.warm()  # what start() runs in its background thread
    assert engine.recaller.stats.built and engine.recaller.stats.size == 1
    engine.store(sid, "Tea", "The user dislikes green tea.")  # the write listener keeps counting
    assert engine.recaller.stats.size == 2
