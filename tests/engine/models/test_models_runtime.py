"""The ONNX embedder and gate on real onnxruntime sessions with tiny graphs the tests build."""

import numpy as np
import pytest

from keepmind.engine.models import manifest as manifests
from keepmind.engine.models.manifest import ModelError
from keepmind.engine.models.runtime import Embedder, Gate, intra_op_threads, load_tokenizer


def _embedder(tiny, tmp_path, model_id="tiny-embed", **kw):
    man = tiny.install_tiny(tmp_path / "models", model_id, **kw)
    return Embedder(man, tmp_path / "models" / model_id, floor=man.min_cosine, floor_source="manifest")


def test_embeddings_are_l2_normalized_float32_with_manifest_dims(tiny, tmp_path):
    emb = _embedder(tiny, tmp_path)
    out = emb.embed_passages(["the user prefers dark mode", "train leaves at noon", ""])
    assert out.dtype == np.float32 and out.shape == (3, tiny.DIMS)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_mean_pooling_ignores_padding_so_batching_does_not_change_vectors(tiny, tmp_path):
    emb = _embedder(tiny, tmp_path)
    short, long = "dark", "the user prefers dark mode every morning at noon"
    together = emb.embed_passages([short, long])
    alone = np.vstack([emb.embed_passages([short]), emb.embed_passages([long])])
    assert np.allclose(together, alone, atol=1e-5)
    # and it is the masked mean of the token rows: [CLS] dark [SEP]
    table, ids = tiny.embedding_table(), tiny.vocab_ids()
    expected = table[[ids["[CLS]"], ids["dark"], ids["[SEP]"]]].mean(axis=0)
    assert np.allclose(together[0], expected / np.linalg.norm(expected), atol=1e-5)


def test_large_batches_keep_the_input_order(tiny, tmp_path):
    emb = _embedder(tiny, tmp_path)
    texts = [("dark " * (i % 7 + 1)) + ("train " * (i % 5)) for i in range(70)]  # > one batch, mixed lengths
    together = emb.embed_passages(texts)
    for i in (0, 3, 33, 69):
        assert np.allclose(together[i], emb.embed_passages([texts[i]])[0], atol=1e-5)


def test_batches_embedded_in_lanes_give_the_vectors_of_one_batch_after_another(tiny, tmp_path, monkeypatch):
    from keepmind.engine.models import runtime

    texts = [("dark " * (i % 9 + 1)) + ("train " * (i % 4)) + "noon " * (i % 3) for i in range(300)]  # 10 batches
    monkeypatch.setattr(runtime, "embed_threads", lambda: 1)
    monkeypatch.setattr(runtime, "intra_op_threads", lambda: 1)   # one lane: the batches in turn
    in_turn = _embedder(tiny, tmp_path).embed_passages(texts)
    monkeypatch.setattr(runtime, "intra_op_threads", lambda: 3)   # three lanes of one thread side by side
    monkeypatch.setattr(runtime, "_batch_runners", None)
    emb = _embedder(tiny, tmp_path / "again")
    assert emb._lanes == 3
    assert np.array_equal(emb.embed_passages(texts), in_turn)
    assert np.array_equal(emb.embed_passages(texts[:5]), in_turn[:5])   # one batch: no lanes


def test_cls_pooling_takes_the_first_token(tiny, tmp_path):
    emb = _embedder(tiny, tmp_path, pooling="cls")
    table, ids = tiny.embedding_table(), tiny.vocab_ids()
    cls = table[ids["[CLS]"]] / np.linalg.norm(table[ids["[CLS]"]])
    out = emb.embed_passages(["dark mode", "train at noon"])
    assert np.allclose(out, np.vstack([cls, cls]), atol=1e-5)


def test_shared_words_are_closer_than_unrelated_ones(tiny, tmp_path):
    emb = _embedder(tiny, tmp_path)
    a, b, c = emb.embed_passages(["user prefers dark mode", "the user likes dark mode", "train leaves at noon"])
    assert a @ b > a @ c


def test_query_prefix_goes_on_queries_only(tiny, tmp_path):
    emb = _embedder(tiny, tmp_path, prefix="query: ")
    q = emb.embed_queries(["dark mode"])[0]
    p = emb.embed_passages(["dark mode"])[0]
    assert not np.allclose(q, p)
    assert np.allclose(q, emb.embed_passages(["query: dark mode"])[0], atol=1e-6)


def test_only_declared_graph_inputs_are_fed(tiny, tmp_path):
    emb = _embedder(tiny, tmp_path, "no-types", token_types=False)  # would raise if token_type_ids were fed
    assert emb.embed_queries(["dark mode"]).shape == (1, tiny.DIMS)


def test_tokenizer_json_fixed_padding_and_truncation_are_overridden(tiny, tmp_path):
    man = tiny.install_tiny(tmp_path / "models", "tiny-embed", max_tokens=40)  # its tokenizer.json pads to 128
    tok = load_tokenizer(tmp_path / "models" / "tiny-embed", man)
    short = tok.encode_batch(["dark", "dark mode please"])
    assert [len(e.ids) for e in short] == [5, 5]  # padded to the longest in the batch, not 128
    assert len(tok.encode_batch(["dark " * 300])[0].ids) == 40  # truncated at the manifest's max


def test_output_dims_must_match_the_manifest(tiny, tmp_path):
    man = tiny.install_tiny(tmp_path / "models", "tiny-embed")
    wrong = manifests.parse({**man.as_dict(), "dims": tiny.DIMS + 1})
    with pytest.raises(ModelError, match="manifest says"):
        Embedder(wrong, tmp_path / "models" / "tiny-embed")


def test_a_file_that_is_not_a_model_fails_with_a_model_error(tiny, tmp_path):
    man = tiny.install_tiny(tmp_path / "models", "tiny-embed")
    (tmp_path / "models" / "tiny-embed" / "model.onnx").write_bytes(b"not onnx at all")
    with pytest.raises(ModelError, match="could not be loaded"):
        Embedder(man, tmp_path / "models" / "tiny-embed")


def test_intra_op_threads_are_sized_to_the_machine(monkeypatch):
    from keepmind.engine.models.runtime import embed_threads

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert intra_op_threads() == 2 and embed_threads() == 1   # a core left to the FTS5 query
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert intra_op_threads() == 1 and embed_threads() == 1
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    assert intra_op_threads() == 4 and embed_threads() == 4


def _gate(tiny, tmp_path, **kw):
    man = tiny.install_tiny(tmp_path / "models", "tiny-gate", role="gate", **kw)
    return Gate(man, tmp_path / "models" / "tiny-gate", threshold=man.threshold, threshold_source="manifest")


def test_gate_scores_pairs_with_token_types_as_sigmoid_probabilities(tiny, tmp_path):
    gate = _gate(tiny, tmp_path)
    scores = gate.score("what theme does the user like", ["they like dark themes", "train leaves at noon"])
    assert len(scores) == 2 and all(0.0 < s < 1.0 for s in scores)
    # the logit counts memory-side tokens only: with token types missing both would be 0.5
    assert scores[0] > 0.99 and scores[1] < 0.2
    assert gate.score("dark dark dark", []) == []


def test_gate_keeps_order_and_truncates_only_the_memory_side(tiny, tmp_path):
    gate = _gate(tiny, tmp_path, max_tokens=32)
    long_query = "what does the user like " * 20  # ~100 tokens: clipped to half, never to nothing
    late = "the " * 40 + "dark themes"  # the relevant words are past the budget: truncated away
    early = "dark themes " + "the " * 40
    s_early, s_late = gate.score(long_query, [early, late])
    assert s_early > 0.99 and s_late == pytest.approx(0.5)
