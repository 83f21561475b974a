"""Tiny BERT-shaped ONNX models and a WordPiece tokenizer, built by the tests.

The graphs have the real models' input and output names (input_ids, attention_mask,
token_type_ids -> last_hidden_state or logits), so the runtime code paths are the real ones:
  - the embedder's last_hidden_state is an embedding-table lookup of each token (so mean pooling
    gives a bag-of-words vector and shared words mean a higher cosine);
  - the gate's logit is the sum of per-token weights over the memory side only (token type 1), so
    pairs fed without token types would all score sigmoid(0) = 0.5.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from keepmind.engine.models import manifest as manifests
from keepmind.engine.models.verify import sha256_file

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ("the user prefers dark mode they like themes editor train leaves at noon coffee every "
         "morning query passage light blue cat dog sky garden meeting project release notes what "
         "does theme screen bright color colour night keepmind warm up".split())
VOCAB = SPECIALS + sorted(set(WORDS)) + ["##s", "##ing"]
DIMS = 16
GATE_WEIGHTS = {"dark": 4.0, "themes": 2.0, "theme": 2.0, "night": 1.0, "train": -2.0, "leaves": -2.0,
                "noon": -2.0}  # every other token weighs 0


def vocab_ids() -> dict[str, int]:
    return {tok: i for i, tok in enumerate(VOCAB)}


def write_tokenizer(folder: Path, *, fixed_padding: int | None = 128) -> None:
    """vocab.txt and a tokenizer.json (with baked-in fixed padding/truncation, like the real one)."""
    from tokenizers.implementations import BertWordPieceTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    tok = BertWordPieceTokenizer(vocab_ids(), lowercase=True)
    if fixed_padding:
        tok.enable_padding(length=fixed_padding)
        tok.enable_truncation(max_length=fixed_padding)
    tok.save(str(folder / "tokenizer.json"))


def _inputs(token_types: bool):
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if token_types else [])
    return [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in names]


def _save(graph, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def embedding_table(seed: int = 7, dims: int = DIMS) -> np.ndarray:
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(len(VOCAB), dims)).astype(np.float32)
    ids = vocab_ids()
    for a, b in (("themes", "theme"), ("colour", "color"), ("dark", "night")):
        table[ids[b]] = table[ids[a]] * 0.8 + table[ids[b]] * 0.2
    return table


def write_embedder(path: Path, *, token_types: bool = True, seed: int = 7, dims: int = DIMS) -> None:
    table = numpy_helper.from_array(embedding_table(seed, dims), name="word_embeddings")
    node = helper.make_node("Gather", ["word_embeddings", "input_ids"], ["last_hidden_state"], axis=0)
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", dims])
    _save(helper.make_graph([node], "tiny_embedder", _inputs(token_types), [out], initializer=[table]), path)


def write_gate(path: Path) -> None:
    weights = np.zeros((len(VOCAB),), dtype=np.float32)
    for word, w in GATE_WEIGHTS.items():
        weights[vocab_ids()[word]] = w
    nodes = [
        helper.make_node("Gather", ["token_weights", "input_ids"], ["per_token"], axis=0),
        helper.make_node("Cast", ["token_type_ids"], ["memory_side"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["per_token", "memory_side"], ["weighted"]),
        helper.make_node("ReduceSum", ["weighted", "axes"], ["logits"], keepdims=1),
    ]
    inits = [numpy_helper.from_array(weights, name="token_weights"),
             numpy_helper.from_array(np.array([1], dtype=np.int64), name="axes")]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    _save(helper.make_graph(nodes, "tiny_gate", _inputs(True), [out], initializer=inits), path)


def manifest_obj(model_id: str, folder: Path, *, role: str = "embedder", pooling: str = "mean",
                 dims: int | None = DIMS, prefix: str = "", max_tokens: int = 64,
                 calibration: dict | None = None, with_tokenizer_json: bool = True,
                 hub: dict | None = None) -> dict:
    names = ["model.onnx", "vocab.txt"] + (["tokenizer.json"] if with_tokenizer_json else [])
    files = [{"name": n, "size": (folder / n).stat().st_size, "sha256": sha256_file(folder / n)}
             for n in names]
    if hub:
        for f in files:
            f["path"] = {"model.onnx": "onnx/model.onnx"}.get(f["name"], f["name"])
    return {
        "id": model_id, "role": role, "files": files, "dims": dims if role == "embedder" else None,
        "pooling": pooling if role == "embedder" else None, "normalize": role == "embedder",
        "lowercase": True, "max_tokens": max_tokens, "query_prefix": prefix, "custom": True,
        "source": {"hub": hub} if hub else {"import": "tests"},
        "calibration": calibration if calibration is not None else (
            {"min_cosine": 0.1} if role == "embedder" else {"threshold": 0.5}),
    }


def install_tiny(models_dir: Path, model_id: str = "tiny-embed", *, role: str = "embedder",
                 seed: int = 7, **kw) -> manifests.Manifest:
    """Build a tiny model into models_dir/<id>/ with a custom manifest beside it."""
    folder = Path(models_dir) / model_id
    write_tokenizer(folder)
    if role == "embedder":
        write_embedder(folder / "model.onnx", token_types=kw.pop("token_types", True), seed=seed,
                       dims=kw.get("dims", DIMS))
    else:
        write_gate(folder / "model.onnx")
    obj = manifest_obj(model_id, folder, role=role, **kw)
    (folder / "manifest.json").write_text(json.dumps(obj, indent=2), encoding="utf-8")
    return manifests.parse(obj)
