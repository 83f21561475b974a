"""The LoCoMo harness: flawed data is read correctly, metrics are exact, the command runs end to end."""

import json
from types import SimpleNamespace

import pytest

from keepmind.desktop.cli import main
from keepmind.engine.recall import metrics
from keepmind.engine.recall.eval_data import cross_partner, dia_ids, load_locomo, parse_conversation
from keepmind.engine.recall.rank import rank


def _conv(sample, a, b, facts, qa):
    return {
        "sample_id": sample,
        "conversation": {
            "speaker_a": a, "speaker_b": b,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": a, "dia_id": "D1:1", "text": f"Hi {b}! I adopted a beagle puppy named Biscuit."},
                {"speaker": b, "dia_id": "D1:2", "text": "Lovely! I started pottery classes on Tuesdays."},
                {"speaker": a, "dia_id": "D1:3", "text": "I also booked a trip to Kyoto for October."},
            ],
        },
        "observation": {"session_1_observation": {a: facts[:2], b: facts[2:] + [
            [f"{b} enjoys cooking spicy noodles on weekends.", "D1:2"],
            [f"{b} is learning Spanish with an app.", "D1:2"],
            [f"{b} thinks autumn is the best season for hiking.", "D1:2"]]}},
        "qa": qa,
    }


def write_data(tmp_path):
    convs = [
        _conv("conv-a", "Alice", "Bob",
              [["Alice adopted a beagle puppy named Biscuit.", "D1:1"],
               ["Alice booked a trip to Kyoto for October.", ["D1:3"]],
               ["Bob started pottery classes on Tuesdays.", "D1:2, D1:9"]],
              [{"question": "What is the name of Alice's puppy?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
               {"question": "When does Bob go to pottery class?", "answer": "Tuesdays", "evidence": ["D1:2; D1:9"], "category": 2},
               {"question": "Where is Alice travelling in October?", "answer": "Kyoto", "evidence": ["D:1:3"], "category": 1},
               {"question": "Why does Alice hate cats?", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
               {"question": "What did Bob cook?", "answer": "?", "evidence": ["D7:7"], "category": 4}]),
        _conv("conv-b", "Carol", "Dan",
              [["Carol runs marathons in Berlin.", "D1:1"], ["Carol works as a nurse.", "D1:3"],
               ["Dan plays jazz piano.", "D1:02"]],
              [{"question": "Which city does Carol run marathons in?", "answer": "Berlin", "evidence": ["D1:1 D1:3"], "category": 4}]),
    ]
    data = tmp_path / "tiny-locomo.json"
    data.write_text(json.dumps(convs))
    negatives = tmp_path / "negatives.jsonl"
    negatives.write_text("\n".join(json.dumps({"id": f"n{i}", "query": q, "source": "offtopic"}) for i, q in enumerate(
        ["How are library catalogues indexed by subject?", "What is the boiling point of tungsten?"])) + "\n")
    return data, negatives


def test_malformed_evidence_and_dia_ids_are_normalized():
    assert dia_ids("D8:6; D9:17") == {"D8:6", "D9:17"}
    assert dia_ids("D:11:26") == {"D11:26"} and dia_ids("D30:05") == {"D30:5"}
    assert dia_ids("D1:1 D1:3") == {"D1:1", "D1:3"} and dia_ids(["D2:1", "D2:4,D2:5"]) == {"D2:1", "D2:4", "D2:5"}
    assert dia_ids("D") == frozenset()


def test_answerable_questions_and_anonymized_text(tmp_path):
    data, _ = write_data(tmp_path)
    convs = load_locomo(data, anonymize=True)
    a = convs[0]
    assert len(a.questions) == 3 and a.skipped_questions == 2  # adversarial and dangling evidence skipped
    assert a.questions[0].text == "What is the name of User's puppy?"
    assert a.facts[2].text.startswith("Friend started pottery") and a.facts[2].dia_ids == {"D1:2", "D1:9"}
    assert a.questions[1].evidence == {"D1:2"}  # D1:9 points to no turn
    assert a.turns[0].text.startswith("User: Hi Friend!")
    assert cross_partner(convs, 0) == 1


def test_conversations_sharing_a_first_name_are_never_cross_partners():
    same = [parse_conversation(_conv(s, a, b, [["x", "D1:1"]] * 3, [])) for s, a, b in
            (("c1", "John", "Maria"), ("c2", "Tim", "John"), ("c3", "Jon", "Gina"))]
    assert cross_partner(same, 0) == 2 and cross_partner(same, 1) == 2


def test_gate_metrics_follow_the_issue_definitions():
    def rec(kind, relevant, ranked, injected, source=None):
        ranked = [SimpleNamespace(id=i, candidate=SimpleNamespace(cosine=0.5)) for i in ranked]
        return SimpleNamespace(kind=kind, source=source or kind, relevant=frozenset(relevant), ranked=ranked,
                               injected=injected)
    records = [
        rec("positive", {"a"}, ["a", "b", "c"], ["a", "b"]),      # eligible, retained, 1 of 2 relevant
        rec("positive", {"z"}, ["x", "y", "w", "z"], ["x"]),      # not eligible (relevant at rank 4)
        rec("positive", {"c"}, ["a", "b", "c"], []),              # eligible, refused
        rec("cross_conversation", set(), ["q"], []),
        rec("negative", set(), ["q"], ["q"], source="CISI"),
    ]
    m = metrics.gate_metrics(records)
    assert m["relevant_recall_retained"] == 0.5 and m["hit_rate"] == round(1 / 3, 4)
    assert m["precision"] == round(1 / 3, 4) and m["mean_injected_positive"] == 1.0
    assert m["zero_injection"] == {"CISI": 0.0, "cross_conversation": 1.0}


@pytest.mark.offline_model
def test_eval_locomo_runs_end_to_end(tmp_path, offline_models_home, capsys):
    data, negatives = write_data(tmp_path)
    out = tmp_path / "eval.json"
    assert main(["eval", "locomo", "--home", str(offline_models_home), "--data", str(data),
                 "--negatives", str(negatives), "--anonymize", "--baseline", "--compare-rankings",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["retrieval"]["n"] == 4 and result["gate"]["n_positive"] == 4
    assert result["retrieval"]["recall@10"] >= result["retrieval"]["recall@5"] >= result["retrieval"]["recall@1"]
    assert result["retrieval"]["recall@5"] >= 0.75  # six facts per store: the answer is in the top 5
    assert set(result["baselines"]) >= {"cosine", "bm25", "floor_only_gate"}
    assert set(result["gate"]["zero_injection"]) == {"cross_conversation", "offtopic"}
    assert result["latency_ms"]["p95"] >= result["latency_ms"]["p50"] > 0
    assert result["config"]["model_id"] == "all-minilm-l6-v2" and result["config"]["skipped_questions"] == 2
    assert "retrieval (hybrid)" in capsys.readouterr().out


@pytest.mark.offline_model
def test_calibrate_picks_floor_weights_and_thresholds_without_touching_the_manifest_on_a_dry_run(
        tmp_path, offline_models_home):
    from keepmind.engine.models.manifest import MANIFEST_DIR
    from keepmind.engine.recall.calibrate import RELATIVE_GRID
    from keepmind.engine.recall.gate import FEATURES, QUERY_FEATURES

    data, negatives = write_data(tmp_path)
    shipped = (MANIFEST_DIR / "all-minilm-l6-v2.json").read_text()
    out = tmp_path / "cal.json"
    assert main(["recall", "calibrate", "--home", str(offline_models_home), "--data", str(data),
                 "--negatives", str(negatives), "--anonymize", "--dry-run", "--json", str(out)]) == 0
    cal = json.loads(out.read_text())
    assert -1.0 <= cal["min_cosine"] <= 1.0 and cal["data"].startswith("tiny-locomo.json (facts mode, anonymized")
    assert set(cal["feature_gate"]["weights"]) == set(FEATURES)
    assert set(cal["feature_gate"]["query_model"]["weights"]) == set(QUERY_FEATURES)
    assert 0.0 <= cal["feature_gate"]["query_threshold"] <= 1.0 and 0.0 <= cal["feature_gate"]["item_threshold"] <= 1.0
    assert cal["feature_gate"]["relative"] in RELATIVE_GRID
    assert cal["dev_metrics"]["hybrid"]["dev"]["relevant_recall_retained"] >= 0.96 * 0.99
    assert len(cal["date"]) == 10 and (MANIFEST_DIR / "all-minilm-l6-v2.json").read_text() == shipped


@pytest.mark.offline_model
def test_calibrate_picks_the_coverage_weight_by_mrr_and_writes_it(tmp_path, offline_models_home, monkeypatch):
    import shutil

    from keepmind.engine.models import manifest
    from keepmind.engine.recall.calibrate import COVERAGE_GRID

    shipped = tmp_path / "manifests"  # the command writes shipped manifests in place: write a copy
    shutil.copytree(manifest.MANIFEST_DIR, shipped)
    monkeypatch.setattr(manifest, "MANIFEST_DIR", shipped)
    data, negatives = write_data(tmp_path)
    args = ["recall", "calibrate", "--home", str(offline_models_home), "--data", str(data),
            "--negatives", str(negatives), "--anonymize"]
    assert main(args) == 0
    cal = json.loads((shipped / "all-minilm-l6-v2.json").read_text())["calibration"]
    report = cal["dev_metrics"]["ranking"]
    sweep = report["sweep"]
    assert [row["coverage_weight"] for row in sweep] == list(COVERAGE_GRID)
    best = max(row["mrr"] for row in sweep)
    assert cal["ranking"] == {"coverage_weight": min(r["coverage_weight"] for r in sweep if r["mrr"] == best)}
    assert report["chosen_by"] == "sweep" and report["sweep_pick"] == cal["ranking"]["coverage_weight"]
    assert report["swept_on"] == "the run with names intact" and "names intact" in cal["data"]
    assert "note" not in cal
    # the smallest calibration store, so recall never reads IDF off a smaller collection
    sizes = [len(c.facts) for c in load_locomo(data)]
    assert cal["term_stats"] == {"min_memories": min(sizes)} and min(sizes) > 0

    assert main(args + ["--coverage-weight", "0.3", "--note", "by hand"]) == 0
    cal = json.loads((shipped / "all-minilm-l6-v2.json").read_text())["calibration"]
    assert cal["ranking"] == {"coverage_weight": 0.3} and cal["note"] == "by hand"
    assert cal["dev_metrics"]["ranking"]["chosen_by"] == "hand"


@pytest.mark.offline_model
def test_calibrate_lexical_fits_the_gate_of_recall_without_a_query_vector(tmp_path, offline_models_home,
                                                                          monkeypatch):
    import keepmind.desktop.commands.recall as cmd
    from keepmind.engine.recall.gate import FEATURES, LEXICAL_CALIBRATION, FeatureGateParams, lexical_calibration

    shipped = LEXICAL_CALIBRATION.read_text()
    target = tmp_path / "lexical_gate.json"   # the command writes the shipped file in place: redirect it
    monkeypatch.setattr(cmd, "LEXICAL_CALIBRATION", target)
    data, negatives = write_data(tmp_path)
    args = ["recall", "calibrate", "--home", str(offline_models_home), "--data", str(data),
            "--negatives", str(negatives), "--anonymize", "--lexical"]
    assert main(args + ["--dry-run"]) == 0 and not target.exists()
    assert main(args + ["--note", "tiny"]) == 0
    cal = json.loads(target.read_text())
    weights = cal["feature_gate"]["weights"]
    assert set(weights) == set(FEATURES)
    # no query vector, so every cosine feature is zero there and gets no weight
    assert all(weights[f] == 0.0 for f in ("cosine", "cosine_z", "cosine_rank", "cosine_over_4th",
                                           "cosine_x_coverage", "gap_to_best"))
    assert cal["feature_gate"]["query_model"]["weights"]["max_cosine"] == 0.0
    assert cal["term_stats"] == {"min_memories": min(len(c.facts) for c in load_locomo(data))}
    assert cal["data"].startswith("tiny-locomo.json (facts mode, anonymized") and cal["note"] == "tiny"
    assert cal["dev_metrics"]["lexical"]["questions_with_candidates"] > 0
    assert FeatureGateParams.from_calibration(cal, source="lexical") is not None
    assert lexical_calibration(target)["feature_gate"] == cal["feature_gate"]
    assert LEXICAL_CALIBRATION.read_text() == shipped


def _record(kind, relevant, pool):
    from keepmind.engine.recall.evaluation import JobRecord
    from keepmind.engine.recall.rank import Candidate

    cands = [Candidate(i, {"memory_class": "durable_fact", "kind": "document"}, cos, 0.0, coverage=cov)
             for i, cos, cov in pool]
    return JobRecord(kind=kind, source=kind, qid="q", store="s", relevant=frozenset(relevant),
                     ranked=rank(cands, 0, method="hybrid"), pool=cands)


def test_the_coverage_sweep_breaks_ties_toward_the_smaller_weight_and_reranks():
    from keepmind.engine.recall.calibrate import COVERAGE_GRID, rerank, sweep_coverage
    from keepmind.engine.recall.rank import RankWeights

    # Coverage decides nothing here (the relevant memory leads on cosine and coverage): 0.0 wins the tie.
    plain = [_record("positive", {"a"}, [("a", 0.8, 0.5), ("b", 0.3, 0.1)])]
    assert sweep_coverage(plain)[0] == 0.0
    # Here the relevant memory covers the question but is less similar: a weight of 0.2 or more lifts it.
    covering = [_record("positive", {"b"}, [("a", 0.6, 0.2), ("b", 0.45, 1.0)])]
    picked, sweep = sweep_coverage(covering)
    assert picked == 0.2 and [r["mrr"] for r in sweep] == [0.5, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert len(sweep) == len(COVERAGE_GRID)
    assert [c.id for c in rerank(covering, RankWeights(coverage=picked))[0].ranked] == ["b", "a"]


def test_logistic_fit_separates_separable_data():
    import numpy as np

    from keepmind.engine.recall.calibrate import fit_logistic

    X = np.array([[0.1], [0.2], [0.3], [0.7], [0.8], [0.9]])
    w = fit_logistic(X, np.array([0, 0, 0, 1, 1, 1.0]), l2=0.01)
    assert w[0] > 0 and (X[:, 0] * w[0] + w[1] > 0).tolist() == [False, False, False, True, True, True]


@pytest.mark.offline_model
def test_calibrate_with_task_data_picks_task_weights_and_thresholds_and_reports_leave_one_topic_out(
        tmp_path, offline_models_home):
    from keepmind.engine.models.manifest import MANIFEST_DIR
    from keepmind.engine.recall.calibrate import STANDING_GRID, TASK_COVERAGE_GRID

    from .test_prefeval import write_pairs

    data, negatives = write_data(tmp_path)
    shipped = (MANIFEST_DIR / "all-minilm-l6-v2.json").read_text()
    out = tmp_path / "cal.json"
    assert main(["recall", "calibrate", "--home", str(offline_models_home), "--data", str(data),
                 "--negatives", str(negatives), "--anonymize", "--prefeval", str(write_pairs(tmp_path)),
                 "--prefeval-users", "3", "--target-zero-injection", "0.5", "--dry-run", "--json", str(out)]) == 0
    cal = json.loads(out.read_text())
    ranking = cal["ranking"]
    assert ranking["task_coverage_weight"] in TASK_COVERAGE_GRID and ranking["standing_weight"] in STANDING_GRID
    task_sweep = cal["dev_metrics"]["ranking"]["task"]["sweep"]
    assert len(task_sweep) == len(TASK_COVERAGE_GRID) * len(STANDING_GRID)
    assert max(r["mrr"] for r in task_sweep) == next(r["mrr"] for r in task_sweep if (
        r["task_coverage_weight"], r["standing_weight"]) == (ranking["task_coverage_weight"], ranking["standing_weight"]))
    hybrid = cal["dev_metrics"]["hybrid"]
    task_gate = cal["feature_gate"]["task"]
    assert {"weights", "bias", "item_threshold", "query_threshold", "relative", "query_model"} <= set(task_gate)
    # the rule for stores too small to read lets through what the zero-injection target allows, against
    # the cosines of the pairs' questions to preferences of other topics
    surprise = task_gate["surprise"]
    assert surprise["alpha"] == 0.5 and 0.0 < surprise["sd"] < 0.3 and -0.1 < surprise["mean"] < 0.3
    assert hybrid["prefeval_dev"]["zero_injection"]["absent_topic"] >= 0.5
    assert hybrid["leave_one_topic_out"]["n_positive"] == hybrid["prefeval_dev"]["n_positive"] > 0
    assert hybrid["targets"]["zero_injection"] == 0.5
    assert "pairs.jsonl: 3 simulated users" in cal["data"]
    assert (MANIFEST_DIR / "all-minilm-l6-v2.json").read_text() == shipped


def test_eval_commands_look_for_the_dev_data_next_to_the_checkout():
    from keepmind.desktop.commands import recall

    assert (recall.repository() / "pyproject.toml").is_file()
    assert (recall.repository() / "engine" / "recall" / "pipeline.py").is_file()


def test_an_evaluation_store_keeps_its_own_standing_clock(tmp_path, monkeypatch):
    """Ranking weighs a memory's age: on the wall clock a slower or busier run aged memories
    differently between store and recall, so the same data could score differently."""
    import time

    from keepmind.engine import open_engine
    from keepmind.engine.recall.evaluation import open_stores_engine

    engine = open_stores_engine(tmp_path / "store", open_engine)
    try:
        before = engine.now()
        ticking = iter(range(10**12, 10**13, 10**9))
        monkeypatch.setattr(time, "time", lambda: next(ticking))
        assert engine.now() == before
    finally:
        engine.close()
