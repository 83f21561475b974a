"""`keepmind recall calibrate --feedback` learns from the labels people set on recall receipts too."""

import json

import pytest

from keepmind.desktop.cli import main
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults

pytestmark = pytest.mark.offline_model


def _conv(sample, a, b, facts, qa):
    turns = [{"speaker": a, "dia_id": "D1:1", "text": f"Hi {b}! {facts[0][0]}"},
             {"speaker": b, "dia_id": "D1:2", "text": facts[2][0]},
             {"speaker": a, "dia_id": "D1:3", "text": facts[1][0]}]
    return {"sample_id": sample, "qa": qa,
            "conversation": {"speaker_a": a, "speaker_b": b, "session_1_date_time": "1:56 pm on 8 May, 2023",
                             "session_1": turns},
            "observation": {"session_1_observation": {a: facts[:2], b: facts[2:]}}}


def write_data(tmp_path):
    convs = [
        _conv("conv-a", "Alice", "Bob",
              [["Alice adopted a beagle puppy named Biscuit.", "D1:1"], ["Alice booked a trip to Kyoto.", "D1:3"],
               ["Bob started pottery classes on Tuesdays.", "D1:2"]],
              [{"question": "What is the name of Alice's puppy?", "answer": "Biscuit", "evidence": ["D1:1"],
                "category": 4},
               {"question": "When does Bob go to pottery class?", "answer": "Tuesdays", "evidence": ["D1:2"],
                "category": 2}]),
        _conv("conv-b", "Carol", "Dan",
              [["Carol runs marathons in Berlin.", "D1:1"], ["Carol works as a nurse.", "D1:3"],
               ["Dan plays jazz piano.", "D1:2"]],
              [{"question": "Which city does Carol run marathons in?", "answer": "Berlin", "evidence": ["D1:1"],
                "category": 4}]),
    ]
    data = tmp_path / "tiny-locomo.json"
    data.write_text(json.dumps(convs))
    negatives = tmp_path / "negatives.jsonl"
    negatives.write_text("\n".join(json.dumps({"id": f"n{i}", "query": q, "source": "offtopic"}) for i, q in enumerate(
        ["How are library catalogues indexed by subject?", "What is the boiling point of tungsten?"])) + "\n")
    return data, negatives


def test_calibrate_with_feedback_adds_the_labelled_recalls(tmp_path, offline_models_home, capsys):
    settings = defaults().with_overrides(memory__embeddings__auto_download=False)
    with open_engine(offline_models_home, settings=settings, start_workers=False) as engine:
        engine.models.load(download=False)
        sid = engine.open_session("personal", "work")
        engine.store(sid, "Editor", "The user writes code in the Helix editor.")
        tea = engine.store(sid, "Tea", "The user drinks green tea every afternoon.").id
        first = engine.recall(sid, "which editor should I install the plugin for?")
        engine.label_recall(first.receipt_id, tea, "should_recall")
        second = engine.recall(engine.open_session("personal", "work"), "what do I drink in the afternoon?")
        for item in second.items:
            engine.label_recall(second.receipt_id, item.id, "not_here")
        labelled = 1 + (1 if second.items else 0)
    data, negatives = write_data(tmp_path)
    out = tmp_path / "cal.json"
    assert main(["recall", "calibrate", "--home", str(offline_models_home), "--data", str(data), "--negatives",
                 str(negatives), "--anonymize", "--dry-run", "--feedback", "--json", str(out)]) == 0
    said = capsys.readouterr().err
    assert f"feedback: {labelled} labelled recalls added (1 that should have recalled a memory" in said
    cal = json.loads(out.read_text())
    assert cal["data"].endswith("with people's feedback labels)")
    hybrid = cal["dev_metrics"]["hybrid"]["dev"]
    assert hybrid["n_positive"] == 3 + 1  # the three questions, and the labelled recall
