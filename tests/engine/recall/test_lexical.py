"""Without an embedding model recall is lexical, deterministic, gated by the lexical gate, and says why."""

from keepmind.engine.recall.pipeline import RecallConfig


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

    from keepmind.engine.errors import InvalidInput, NotFound

    sid = engine.open_session("personal", "work")
    with pytest.raises(InvalidInput):
        engine.recall(sid, 42)
    with pytest.raises(InvalidInput):
        engine.recall(sid, "coffee", context=[1, 2])
    with pytest.raises(InvalidInput):
        engine.explain("not-a-receipt")
    with pytest.raises(NotFound):
        engine.explain("rcp-" + "0" * 32)


FACTS = (("Home airport", "The user's home airport is Boston Logan; flights depart from Boston."),
         ("Pasta", "The user cooks pasta on Sundays."),
         ("Coffee", "The user drinks oat-milk flat whites every morning."),
         ("Dentist", "The user's dentist appointment is on 14 March at the Elm Street clinic."),
         ("Marathon", "The user is training for the Berlin marathon in September."),
         ("Laptop", "The user's work laptop is a ThinkPad X1 running Fedora."))
OFF_TOPIC = ("Why did the Boston tea party happen?", "What is the history of Sunday as a day of rest?",
             "How do I install Fedora on a Raspberry Pi?",
             "Summarize the morning news about the Berlin wall anniversary.")


def test_without_a_model_the_lexical_gate_decides_and_recall_says_the_vector_is_degraded(engine):
    sid = engine.open_session("personal", "work")
    for title, body in FACTS:
        engine.store(sid, title, body)
    for message, title in (("When is my dentist appointment?", "Dentist"),
                           ("What coffee do I drink in the morning?", "Coffee"),
                           ("Which marathon am I training for?", "Marathon"),
                           ("I need a flight from Boston to Chicago next Friday.", "Home airport")):
        result = engine.recall(engine.open_session("personal", "work"), message)
        assert [i.title for i in result.items] == [title], message
        assert result.degraded == ["vector:embedder_unavailable"]
        assert engine.explain(result.receipt_id)["gate"]["kind"] == "lexical"
    # Each of these shares a word with a memory: without the gate, each injected up to 3 of them.
    ungated = RecallConfig(embeddings_enabled=False, gate_enabled=False)
    for message in OFF_TOPIC:
        assert engine.recaller.trace(engine.scope(sid), message, config=ungated).injected, message
        result = engine.recall(engine.open_session("personal", "work"), message)
        assert result.items == [] and result.block is None, message
        decisions = engine.explain(result.receipt_id)["gate"]["decisions"]
        assert decisions and all(d["reason"].startswith("query below bar") for d in decisions)


def test_with_the_gate_switched_off_the_floors_output_is_injected_and_recall_says_so(home, clock):
    from keepmind.engine import open_engine
    from keepmind.engine.settings import defaults

    settings = defaults().with_overrides(memory__recall__gate__enabled=False)
    with open_engine(home, settings=settings, clock=clock, start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        for title, body in FACTS:
            eng.store(sid, title, body)
        result = eng.recall(sid, OFF_TOPIC[0])
        assert [i.title for i in result.items] == ["Home airport"]
        assert "gate:gate_disabled_by_config" in result.degraded


def test_starting_the_recaller_counts_the_stores_words_once(engine):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Coffee", "The user drinks flat whites.")
    assert not engine.recaller.stats.built
    engine.recaller.warm()  # what start() runs in its background thread
    assert engine.recaller.stats.built and engine.recaller.stats.size == 1
    engine.store(sid, "Tea", "The user dislikes green tea.")  # the write listener keeps counting
    assert engine.recaller.stats.size == 2
