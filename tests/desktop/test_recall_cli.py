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
    # Hybrid recall ran (a query whose embedding overran its budget on a busy machine goes lexical,
    # as recall does, and the bench says so in its modes: not a failure of the bench)
    assert result["memories"] == 40 and "hybrid" in result["modes"]
    assert set(result["stages_ms"]) >= {"embed_ms", "candidates_ms", "total_ms"}
    assert result["recall_ms"]["p95"] >= result["recall_ms"]["p50"] > 0
    assert "recall over 40 memories" in capsys.readouterr().out
    assert main(["bench", "recall", "--home", str(offline_models_home), "--facts", str(facts),
                 "--memories", "40", "--queries", "4", "--boundaries", "4", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["boundaries"] == 4
    assert "recall over 40 memories in 4 boundaries" in capsys.readouterr().out


def test_bench_recall_builds_synthetically_measures_the_floor_and_a_cold_start(tmp_path, offline_models_home, capsys):
    facts = tmp_path / "facts.jsonl"
    facts.write_text("\n".join(json.dumps({"text": t}) for t in (
        "I love hiking in the mountains.", "My dog is called Rex.", "I work as a nurse.")) + "\n")
    out = tmp_path / "bench.json"
    assert main(["bench", "recall", "--home", str(offline_models_home), "--facts", str(facts), "--memories", "60",
                 "--distinct", "3", "--queries", "6", "--cold-starts", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["memories"] == 60 and result["distinct_embedded"] == 3 and "hybrid" in result["modes"]
    assert result["floor_ms"]["embed"]["p95"] > 0 and result["floor_ms"]["scan"]["p95"] > 0
    assert result["ratio_p95"] == round(result["recall_ms"]["p95"] / (
        result["floor_ms"]["embed"]["p95"] + result["floor_ms"]["scan"]["p95"]), 2)
    assert result["disk_mb"] > 0 and result["vector_matrix_mb"] > 0
    assert not result["vectors_quantized"] and result["floor_ms"]["overlap_at_50"] == {"mean": 1.0, "min": 1.0}
    [cold] = result["cold_start_s"]["runs"]
    assert 0 < cold < 120
    printed = capsys.readouterr().out
    assert "synthetic: 3 distinct facts embedded once" in printed and "cold start to the first healthy recall" in printed


def test_bench_recall_keeps_its_store_and_times_it_again_without_building(tmp_path, offline_models_home, capsys):
    facts = tmp_path / "facts.jsonl"
    facts.write_text("\n".join(json.dumps({"text": t}) for t in (
        "I love hiking in the mountains.", "My dog is called Rex.", "I work as a nurse.")) + "\n")
    store, first, again = tmp_path / "kept", tmp_path / "first.json", tmp_path / "again.json"
    common = ["bench", "recall", "--home", str(offline_models_home), "--facts", str(facts), "--memories", "40",
              "--distinct", "3", "--queries", "4", "--store", str(store)]
    assert main([*common, "--json", str(first)]) == 0
    assert main([*common, "--json", str(again)]) == 0
    one, two = json.loads(first.read_text()), json.loads(again.read_text())
    assert not one["store_reused"] and two["store_reused"] and two["ingest_s"] == one["ingest_s"]
    assert two["memories"] == 40 and "recorded when the kept store was built" in capsys.readouterr().out
    with __import__("sqlite3").connect(store / "keepmind.db") as db:  # nothing was written twice
        assert db.execute("SELECT COUNT(*) FROM memory_documents").fetchone()[0] == 40
    # another build is refused, not mixed into this store
    assert main(["bench", "recall", "--home", str(offline_models_home), "--facts", str(facts), "--memories", "50",
                 "--distinct", "3", "--queries", "4", "--store", str(store)]) != 0
    assert "holds another bench build" in capsys.readouterr().err


def test_stored_vectors_are_the_given_ones_and_survive_a_restart(tmp_path, offline_models_home):
    """store_vectors keeps vectors made elsewhere under the memories' own content hashes: a restart
    loads them and embeds nothing again."""
    import numpy as np

    from keepmind.engine import open_engine
    from keepmind.engine.settings import defaults

    settings = defaults().with_overrides(memory__embeddings__auto_download=False,
                                         memory__models_dir=str(offline_models_home / "models"))
    home = tmp_path / "store"
    with open_engine(home, settings=settings, start_workers=False) as engine:
        engine.models.load(download=False, repair=False)
        scope = engine.scope(engine.open_session("personal", "work"))
        ids = engine.insert_drafts([engine.draft(scope, "", t) for t in ("I like tea.", "I like tea (2).")],
                                   notify=False)
        vector = engine.models.embedder().embed_passages(["I like tea."])
        engine.models.store_vectors(ids, np.repeat(vector, 2, axis=0))
        assert np.allclose(engine.models.vectors().vector(ids[1]), vector[0])
    with open_engine(home, settings=settings, start_workers=False) as engine:
        result = engine.models.load(download=False, repair=True)
        assert result.repair is not None and result.repair.embedded == 0
        assert len(engine.models.vectors()) == 2
        assert np.allclose(engine.models.vectors().vector(ids[1]), vector[0])


def test_recall_explain_prints_the_receipt(engine, home, capsys):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Coffee", "The user drinks flat whites.")
    receipt = engine.recall(sid, "what coffee do I drink?").receipt_id
    engine.explain(receipt)  # written before the command reads it
    assert main(["recall", "explain", "--home", str(home), receipt, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["receipt"] == receipt and shown["mode"] == "lexical"
    assert main(["recall", "explain", "--home", str(home), receipt]) == 0  # read as --last reads one
    said = capsys.readouterr().out.splitlines()
    assert said[0].endswith(f"session {sid}  {receipt}") and said[1] == "  message: 'what coffee do I drink?'"
    assert said[2].startswith("  injected 1 of 1 considered (lexical, ") and "Coffee" in said[3]


def test_recall_explain_says_why_a_memory_the_gate_did_not_keep_came(engine, home, capsys):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "", "I'm gluten intolerant.")
    receipt = engine.recall(sid, "Suggest a family dinner for tonight.").receipt_id
    engine.explain(receipt)
    assert main(["recall", "explain", "--home", str(home), receipt]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[3].endswith("I'm gluten intolerant.  (bears on every food task)")


def test_bench_recall_measures_a_quantized_index_against_the_exact_scan(tmp_path, offline_models_home, capsys,
                                                                       monkeypatch):
    from keepmind.engine.models import vectors

    monkeypatch.setattr(vectors, "QUANTIZE_FROM", 50)   # as a store of 50,000 memories or more loads
    facts = tmp_path / "facts.jsonl"
    facts.write_text("\n".join(json.dumps({"text": t}) for t in (
        "I love hiking in the mountains.", "My dog is called Rex.", "I work as a nurse.",
        "I am allergic to peanuts.", "My sister Anna lives in Lisbon.", "I play the cello on Tuesdays.")) + "\n")
    out = tmp_path / "bench.json"
    assert main(["bench", "recall", "--home", str(offline_models_home), "--facts", str(facts), "--memories", "300",
                 "--queries", "8", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["vectors_quantized"] and result["floor_ms"]["overlap_at_50"]["min"] >= 0.98
    assert "quantized, re-ranked search): overlap mean" in capsys.readouterr().out
