"""Word bridges between a task and a standing statement (bridge.py)."""

import numpy as np
import pytest

from keepmind.engine.recall.bridge import WordVectors, bridge, topical_words


def test_topical_words_leave_out_the_request_and_the_stance():
    assert topical_words("Book me a flight to Berlin next week.") == ["flight", "berlin", "next", "week"]
    assert topical_words("Can you recommend some podcasts for my commute?") == ["podcasts", "commute"]
    assert topical_words("I always prefer a window seat when I fly.") == ["window", "seat", "fly"]
    # a longer stance phrase holds the topic: its words stay
    assert "flashcards" in topical_words("I find flashcards ineffective.")


def _unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_bridge_is_the_best_pair_of_different_stems():
    vectors = {"flight": _unit([1, 0.2, 0]), "fly": _unit([1, 0.3, 0]), "seat": _unit([0, 1, 0]),
               "flights": _unit([1, 0.2, 0.01]), "berlin": _unit([0, 0, 1])}
    assert bridge(["flight", "berlin"], ["seat", "fly"], vectors) > 0.99
    # the same stem is coverage's business, not a bridge
    assert bridge(["flight"], ["flights"], vectors) == 0.0
    assert bridge(["flight"], ["unknown"], vectors) == 0.0 and bridge([], ["fly"], vectors) == 0.0


class _Embedder:
    model_id = "fake"

    def __init__(self):
        self.calls = []

    def embed_passages(self, words):
        self.calls.append(list(words))
        return np.eye(8, dtype=np.float32)[[hash(w) % 8 for w in words]]


def test_words_are_embedded_once_and_the_cache_is_bounded():
    cache = WordVectors(limit=3)
    fake = _Embedder()
    assert cache.learn(fake, ["fly", "seat", "fly"]) == 2 and cache.learn(fake, ["fly"]) == 0
    assert fake.calls == [["fly", "seat"]]
    cache.learn(fake, ["window", "berlin"])
    assert len(cache) == 3 and set(cache.found("fake", ["fly", "seat", "window", "berlin"])) == {"seat", "window",
                                                                                                 "berlin"}
    assert cache.found("other-model", ["seat"]) == {}


@pytest.mark.offline_model
def test_the_booking_task_bridges_to_the_seat_preference_with_the_real_model(model_engine):
    sid = model_engine.open_session("personal", "work")
    pref = model_engine.store(sid, "", "I always prefer a window seat when I fly.").id
    other = model_engine.store(sid, "", "I dislike horror films.").id
    trace = model_engine.recaller.trace(model_engine.scope(sid), "Book me a flight to Berlin next week.")
    bridges = {r.id: r.candidate.bridge for r in trace.ranked}
    assert bridges[pref] > 0.6 > bridges[other]          # flight ~ fly
    assert "bridge_ms" in trace.timings
    question = model_engine.recaller.trace(model_engine.scope(sid), "When did I fly to Berlin?")
    assert all(r.candidate.bridge == 0.0 for r in question.ranked)   # questions get no bridges
