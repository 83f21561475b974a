"""The bench and explain commands run and print their numbers."""

import json

import pytest

from keepmind.desktop.cli import main

pytestmark = pytest.mark.offline_model


def test_bench_recall_prints_stage_latencies(tmp_path, offline_models_home, capsys):
    facts = tmp_path / "facts.jsonl"
    facts.write_text("\n".join(json.dumps({"text": t}) for t in (
        "I love hiking in the mountains.", "My dog is called Rex.", "I work as a nurse.")) + "\n")
    out = tmp_path / "bench.json"
    assert main(["bench", "recall", "--home", str(offline_models_home), "--facts", str(facts),
                 "--memories", "40", "--queries", "12", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["memories"] == 40 and result["modes"] == ["hybrid"]
    assert set(result["stages_ms"]) >= {"embed_ms", "candidates_ms", "total_ms"}
    assert result["recall_ms"]["p95"] >= result["recall_ms"]["p50"] > 0
    assert "recall over 40 memories" in capsys.readouterr().out
    assert main(["bench", "recall", "--home", str(offline_models_home), "--facts", str(facts),
                 "--memories", "40", "--queries", "4", "--boundaries", "4", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["boundaries"] == 4
    assert "recall over 40 memories in 4 boundaries" in capsys.readouterr().out


def test_recall_explain_prints_the_receipt(engine, home, capsys):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Coffee", "The user drinks flat whites.")
    receipt = engine.recall(sid, "what coffee do I drink?").receipt_id
    engine.explain(receipt)  # written before the command reads it
    assert main(["recall", "explain", "--home", str(home), receipt]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["receipt"] == receipt and shown["mode"] == "lexical"
