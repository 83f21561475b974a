"""`keepmind bench models`: model load time, RSS, query and batch embedding, the gate, vector scans.

Numbers are wall-clock on this machine and noisy when it is shared; they are printed, not asserted.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from keepmind.engine.models import manifest as manifests
from keepmind.engine.models.runtime import Embedder, Gate
from keepmind.engine.models.vectors import VectorIndex
from keepmind.engine.models.verify import model_dir, verify_installed

from ..commands.numbers import positive_int
from ..paths import models_dir_of
from .find import WORDS, percentile


def register(bsub) -> None:
    p = bsub.add_parser("models", help="embedder/gate latency and RSS, top-50 over 100k vectors")
    p.add_argument("--home", dest="home_sub", default=None, help="data dir whose models/ to use")
    p.add_argument("--model", help="embedder id (default: the first verified of the defaults)")
    p.add_argument("--queries", type=positive_int, default=200)
    p.add_argument("--vectors", type=positive_int, default=100_000)
    p.add_argument("--json", dest="json_out", help="write results as JSON to this file")
    p.set_defaults(func=run)


def _timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _stats(ms: list[float]) -> dict:
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 0.95), 2), "n": len(ms)}


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def run(args) -> int:
    rng = random.Random(11)
    models_dir = models_dir_of(args)
    ids = (args.model,) if args.model else manifests.DEFAULT_EMBEDDERS
    model_id = next((i for i in ids if (m := manifests.find(models_dir, i)) and verify_installed(models_dir, m).ok),
                    None)
    if model_id is None:
        print(f"no verified embedder among {', '.join(ids)} in {models_dir}: "
              "run `keepmind models install-offline` first")
        return 1
    results: dict = {"model": model_id}
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    emb = Embedder(manifests.get(models_dir, model_id), model_dir(models_dir, model_id))
    results["load_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    results["rss_mb_after_load"] = round(_rss_mb(), 1)
    results["rss_mb_model"] = round(results["rss_mb_after_load"] - rss0, 1)
    queries = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(args.queries)]
    for q in queries[:10]:
        emb.embed_queries([q])
    it = iter(queries * 2)
    results["query_embed"] = _stats(_timed(lambda: emb.embed_queries([next(it)]), args.queries))
    passages = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) for _ in range(32)]
    results["batch_32_passages"] = _stats(_timed(lambda: emb.embed_passages(passages), 10))
    print(f"embedder {model_id}: load {results['load_ms']} ms, RSS after load {results['rss_mb_after_load']} MB "
          f"(+{results['rss_mb_model']} MB)")
    print(f"  query embed: p50 {results['query_embed']['p50_ms']} ms, p95 {results['query_embed']['p95_ms']} ms "
          f"({args.queries} short queries)")
    print(f"  32-passage batch: p50 {results['batch_32_passages']['p50_ms']} ms, "
          f"p95 {results['batch_32_passages']['p95_ms']} ms (20-60 words each)")
    _bench_gate(models_dir, results, queries, passages)
    _bench_vectors(results, emb, queries, args.vectors)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2))
    return 0


def _bench_gate(models_dir: Path, results: dict, queries: list[str], passages: list[str]) -> None:
    gate_man = manifests.find(models_dir, manifests.DEFAULT_GATE)
    with tempfile.TemporaryDirectory() as tmp:
        if gate_man is not None and verify_installed(models_dir, gate_man).ok:
            folder, label = model_dir(models_dir, gate_man.id), gate_man.id
        else:
            built = _tiny_gate(Path(tmp), models_dir)
            if built is None:
                print("  gate: skipped (no verified gate, and the onnx package is not installed to build a tiny one)")
                return
            gate_man, folder, label = built[0], built[1], "tiny stand-in gate (no real gate installed)"
        t0 = time.perf_counter()
        gate = Gate(gate_man, folder)
        load_ms = round((time.perf_counter() - t0) * 1000, 1)
        gate.score(queries[0], passages[:3])
        it = iter(queries * 2)
        stats = _stats(_timed(lambda: gate.score(next(it), passages[:3]), 100))
    results["gate"] = {"model": label, "load_ms": load_ms, "three_pairs": stats}
    print(f"gate {label}: load {load_ms} ms; 3 pairs p50 {stats['p50_ms']} ms, p95 {stats['p95_ms']} ms")


def _tiny_gate(tmp: Path, models_dir: Path):
    """A one-layer stand-in with the real gate's inputs/outputs and the installed vocab."""
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    vocab = next((p for p in models_dir.glob("*/vocab.txt")), None)
    if vocab is None:
        return None
    size = sum(1 for _ in vocab.open(encoding="utf-8"))
    weights = np.random.default_rng(3).normal(size=(size,)).astype(np.float32)
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    nodes = [helper.make_node("Gather", ["w", "input_ids"], ["t"], axis=0),
             helper.make_node("Cast", ["token_type_ids"], ["side"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["t", "side"], ["m"]),
             helper.make_node("ReduceSum", ["m", "axes"], ["logits"], keepdims=1)]
    graph = helper.make_graph(nodes, "tiny_gate", inputs,
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
                              initializer=[numpy_helper.from_array(weights, "w"),
                                           numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder = tmp / "tiny-gate"
    folder.mkdir()
    onnx.save(model, str(folder / "model.onnx"))
    (folder / "vocab.txt").write_bytes(vocab.read_bytes())
    from keepmind.engine.models.verify import sha256_file

    man = manifests.parse({"id": "tiny-gate", "role": "gate", "max_tokens": 512,
                           "files": [{"name": n, "size": (folder / n).stat().st_size,
                                      "sha256": sha256_file(folder / n)} for n in ("model.onnx", "vocab.txt")],
                           "calibration": {"threshold": 0.5}})
    return man, folder


def _bench_vectors(results: dict, emb: Embedder, queries: list[str], n: int) -> None:
    rng = np.random.default_rng(5)
    index = VectorIndex(emb.model_id, emb.dims, capacity=n)
    chunk = 10_000
    for start in range(0, n, chunk):
        block = rng.normal(size=(min(chunk, n - start), emb.dims)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        index.upsert_many([f"doc-{i:032x}" for i in range(start, start + len(block))], block)
    qv = emb.embed_queries(queries[:50])
    for q in qv[:5]:
        index.search(q, 50)
    it = iter(list(qv) * 10)
    stats = _stats(_timed(lambda: index.search(next(it), 50), 200))
    results["top50"] = {"vectors": n, "dims": emb.dims, **stats}
    print(f"top-50 over {n:,} x {emb.dims} float32 vectors: p50 {stats['p50_ms']} ms, p95 {stats['p95_ms']} ms")
