"""The prepared copy of a model graph (engine/models/prepare.py) on the real offline all-MiniLM-L6-v2:
the same vectors bit for bit as the model's own file, the quantized embedding table kept int8, and
the model's own file whenever no good copy can be made."""

import os
import stat

import numpy as np
import pytest

from keepmind.engine.models import prepare
from keepmind.engine.models.manifest import get
from keepmind.engine.models.offline import OFFLINE_MODEL
from keepmind.engine.models.runtime import Embedder

onnx = pytest.importorskip("onnx")

TEXTS = ["Book me a flight to Berlin next week.", "I always prefer a window seat when I fly.",
         "what is the capital of Peru?", "", "Caroline went to the LGBTQ support group " * 20]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KEEPMIND_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / prepare.PREPARED / OFFLINE_MODEL


def _unprepared(folder, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(prepare, "load_path", lambda folder, *a, **k: folder / "model.onnx")
        return Embedder(get(None, OFFLINE_MODEL), folder)


def _copies(cache):
    return sorted(cache.glob("model-*.onnx"))


def test_the_prepared_copy_embeds_bit_for_bit_like_the_model_file(_offline_pack, cache, monkeypatch):
    prepared = Embedder(get(None, OFFLINE_MODEL), _offline_pack)
    [copy] = _copies(cache)
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600 and stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert copy.with_suffix(".sha256").read_text().strip() == prepare._hashes.sha256(copy)
    own = _unprepared(_offline_pack, monkeypatch)
    assert np.array_equal(prepared.embed_queries(TEXTS), own.embed_queries(TEXTS))
    assert np.array_equal(prepared.embed_passages(TEXTS), own.embed_passages(TEXTS))

    # The word-embedding table is still int8 in the copy, and its rows are gathered before they
    # become float: no Gather reads a float table of the vocabulary's size.
    graph = onnx.load(str(copy)).graph
    inits = {i.name: i for i in graph.initializer}
    tables = [i for i in graph.initializer if len(i.dims) == 2 and i.dims[0] > 30000 and i.dims[1] > 1]
    assert tables and all(t.data_type == onnx.TensorProto.INT8 for t in tables)
    gathered = {n.input[0] for n in graph.node if n.op_type == "Gather"}
    assert {t.name for t in tables} <= gathered
    assert not any(inits[name].data_type == onnx.TensorProto.FLOAT and inits[name].dims[0] > 30000 and inits[name].dims[-1] > 1
                   for name in gathered if name in inits)


def test_a_damaged_copy_is_rebuilt_and_a_second_load_reuses_the_copy(_offline_pack, cache):
    Embedder(get(None, OFFLINE_MODEL), _offline_pack)
    [copy] = _copies(cache)
    first = copy.stat().st_mtime_ns
    Embedder(get(None, OFFLINE_MODEL), _offline_pack)
    assert copy.stat().st_mtime_ns == first  # reused, not rebuilt

    copy.write_bytes(copy.read_bytes()[:1000])  # a truncated file, e.g. a disk that filled up
    assert prepare.load_path(_offline_pack, None) == copy
    assert copy.with_suffix(".sha256").read_text().strip() == prepare._hashes.sha256(copy)
    assert copy.stat().st_size > 10_000_000


def test_without_a_writable_cache_the_model_loads_from_its_own_file(_offline_pack, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a dir")
    monkeypatch.setenv("KEEPMIND_CACHE_DIR", str(blocker / "cache"))
    assert prepare.load_path(_offline_pack, None) == _offline_pack / "model.onnx"
    emb = Embedder(get(None, OFFLINE_MODEL), _offline_pack)
    assert emb.embed_queries(["window seat"]).shape == (1, 384)


def test_a_copy_whose_output_differs_is_never_kept(_offline_pack, cache, monkeypatch):
    """The safety net for a rewrite that would be wrong on some graph: the probe compares outputs."""
    real = prepare._gather_before_dequantize

    def wrong(source):
        model = onnx.load_from_string(real(source))
        for init in model.graph.initializer:
            if init.name.endswith("word_embeddings.weight_scale"):
                arr = onnx.numpy_helper.to_array(init) * 2
                init.CopyFrom(onnx.numpy_helper.from_array(arr, init.name))
        return model.SerializeToString()

    monkeypatch.setattr(prepare, "_gather_before_dequantize", wrong)
    assert prepare.load_path(_offline_pack, None) == _offline_pack / "model.onnx"
    assert _copies(cache) == []
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no temp file left behind
    assert os.path.isdir(cache)
