"""The PrefEval harness: seeded users, present and absent topics, the command end to end.

The pairs here are written by the test (the dev data is never copied into the repository).
"""

import json

import pytest

from keepmind.desktop.cli import main
from keepmind.engine.errors import InvalidInput
from keepmind.engine.recall import prefeval

from .test_eval import write_data

PAIRS = {
    "travel": [("I always prefer a window seat when I fly.", "Book me a flight to Lisbon next month."),
               ("I refuse to take overnight buses.", "How should I get from Madrid to Porto?"),
               ("I avoid hostels and prefer small family-run hotels.", "Where should I stay in Kyoto?")],
    "food": [("I am allergic to peanuts.", "Can you suggest a quick snack for my hike?"),
             ("I dislike the taste of coriander.", "What should I cook for dinner tonight?"),
             ("I follow a strict vegetarian diet.", "Recommend a restaurant for my birthday.")],
    "music": [("I can't stand loud electronic music.", "What concerts should I go to this summer?"),
              ("I play the cello in a community orchestra on Tuesdays.", "Help me plan my week."),
              ("I only listen to vinyl records.", "What gift would you suggest for my music collection?")],
    "reading": [("I strongly prefer printed books over e-readers.", "What should I read on vacation?"),
                ("I find long fantasy series exhausting.", "Can you recommend a novel for the weekend?"),
                ("I avoid books with graphic violence.", "What thrillers would you suggest?")],
}


def write_pairs(tmp_path, pairs=PAIRS):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"{t}-{i}", "topic": t, "preference": p, "question": q})
                              for t, items in pairs.items() for i, (p, q) in enumerate(items)) + "\n")
    return path


def test_pairs_are_read_and_bad_files_are_refused(tmp_path):
    pairs = prefeval.load_prefeval(write_pairs(tmp_path))
    assert len(pairs) == 12 and {p.topic for p in pairs} == set(PAIRS)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "topic": "t"}\n')
    with pytest.raises(InvalidInput, match="line 1"):
        prefeval.load_prefeval(bad)
    with pytest.raises(InvalidInput, match="two topics"):
        prefeval.load_prefeval(write_pairs(tmp_path, {"travel": PAIRS["travel"]}))


def test_each_user_is_drawn_from_the_seed_with_present_and_absent_topics_apart(tmp_path):
    pairs = prefeval.load_prefeval(write_pairs(tmp_path))
    protocol = prefeval.Protocol(users=3, seed=7, topics=2, per_topic=2, absent_topics=2, per_absent=1)
    plans = prefeval.plan_users(pairs, [], protocol)
    assert plans == prefeval.plan_users(pairs, [], protocol)          # the seed decides everything
    assert plans != prefeval.plan_users(pairs, [], prefeval.Protocol(users=3, seed=8, topics=2, per_topic=2,
                                                                      absent_topics=2, per_absent=1))
    for plan in plans:
        present = {p.topic for p in plan.stored}
        absent = {p.topic for p in plan.negatives}
        assert len(present) == 2 and len(plan.stored) == 4 and not present & absent and len(plan.negatives) == 2


@pytest.mark.offline_model
def test_eval_prefeval_runs_end_to_end(tmp_path, offline_models_home, capsys):
    data = write_pairs(tmp_path)
    background, _ = write_data(tmp_path)
    out = tmp_path / "prefeval.json"
    assert main(["eval", "prefeval", "--home", str(offline_models_home), "--data", str(data), "--background",
                 str(background), "--users", "2", "--seed", "3", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["n_positive"] == 2 * 3 * 3 and result["n_negative"] == 2 * 1 * 2  # 3 present topics, 1 absent
    for key in ("preference_injected", "preference_in_top3", "precision", "zero_injection"):
        assert 0.0 <= result[key] <= 1.0
    assert result["learnt"]["became_memory"] == 1.0  # store_memory keeps every preference
    assert result["latency_ms"]["p95"] >= result["latency_ms"]["p50"] > 0
    assert result["config"]["model_id"] == "all-minilm-l6-v2" and set(result["by_topic"]) == set(PAIRS)
    assert result["config"]["background"] == background.name
    # what was injected, by what it was: the counts add up to the figures above
    kinds = result["injected_kinds"]
    injected = sum(kinds["positive"].values())
    assert injected == round(result["mean_injected_positive"] * result["n_positive"])
    assert sum(kinds["negative"].values()) == round(result["mean_injected_negative"] * result["n_negative"])
    assert kinds["negative"]["needed"] == kinds["negative"]["same_topic_preference"] == 0  # an absent topic's
    if injected:
        assert kinds["positive"]["needed"] / injected == pytest.approx(result["precision"], abs=1e-4)
    out = capsys.readouterr().out
    assert "preference injected" in out and f"for positives {kinds['positive']['needed']} needed" in out


def test_an_injected_memory_is_told_apart_by_what_it_was():
    topic_of = {"m-window": "travel", "m-peanut": "food"}
    background = frozenset({"m-fact"})
    kind = lambda i: prefeval.injected_kind(i, frozenset({"m-window"}), "travel", topic_of, background)  # noqa: E731
    assert [kind(i) for i in ("m-window", "m-peanut", "m-fact", "m-merged")] == [
        "needed", "other_topic_preference", "background", "other"]
    assert prefeval.injected_kind("m-window", frozenset(), "travel", topic_of, background) == "same_topic_preference"


@pytest.mark.offline_model
def test_end_to_end_learns_each_preference_through_the_observer(tmp_path, offline_models_home):
    data = write_pairs(tmp_path)
    out = tmp_path / "e2e.json"
    assert main(["eval", "prefeval", "--home", str(offline_models_home), "--data", str(data), "--users", "1",
                 "--end-to-end", "--no-background", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["config"]["end_to_end"] is True and result["config"]["background"] is None
    # the rule-based extractor learns every one of these statements and keeps its content words
    assert result["learnt"] == {"preferences": 9, "became_memory": 1.0, "kept_content_words": 1.0}


def test_the_dev_background_fills_the_stores_also_when_the_pairs_are_given(tmp_path, monkeypatch):
    """The protocol's background (LoCoMo facts) is the default whatever file the pairs come from."""
    from keepmind.desktop.commands import prefeval as command

    shared = tmp_path / "shared"
    background, _ = write_data(tmp_path)
    (shared / command.DEV_DATA).parent.mkdir(parents=True)
    (shared / command.DEV_DATA).write_text(background.read_text())
    monkeypatch.setattr(command, "_shared_eval", lambda: shared)
    data = write_pairs(tmp_path)
    _, _, convs, name = command.inputs(str(data), None)
    assert convs and name == command.DEV_DATA.name
    _, _, convs, name = command.inputs(str(data), None, no_background=True)
    assert convs == [] and name is None


@pytest.mark.offline_model
def test_a_question_is_further_from_other_topics_preferences_than_from_its_own(tmp_path, offline_models_home):
    from keepmind.engine.engine import open_engine
    from keepmind.engine.models.manifest import get
    from keepmind.engine.models.offline import OFFLINE_MODEL
    from keepmind.engine.models.runtime import Embedder

    pairs = prefeval.load_prefeval(write_pairs(tmp_path))
    mean, sd = prefeval.measure_null(pairs, open_engine=open_engine, models_dir=offline_models_home / "models")
    embedder = Embedder(get(None, OFFLINE_MODEL), offline_models_home / "models" / OFFLINE_MODEL)
    assert (mean, sd) == pytest.approx(prefeval.unrelated_null(pairs, embedder), abs=1e-6)
    own = [float(embedder.embed_queries([p.question])[0] @ embedder.embed_passages([p.preference])[0]) for p in pairs]
    assert 0.0 < sd < 0.2 and mean + sd < sum(own) / len(own)
