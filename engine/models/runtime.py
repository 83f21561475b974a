"""The embedder and the relevance gate on ONNX Runtime, tokenized with the `tokenizers` library.

Both feed only the inputs the graph declares, pad each batch to its longest member (never to a
fixed length baked into a tokenizer.json) and truncate at the manifest's max tokens. The embedder
pools (CLS or masked mean, per manifest) and L2-normalizes; the query prefix goes on queries only.
The gate encodes (query, memory) pairs with token types and truncates only the memory side, then
applies the sigmoid to its single logit here (the exported graphs end at the logit).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from . import prepare
from .manifest import Manifest, ModelError

log = logging.getLogger("keepmind.models")

# Sub-batch per ONNX run (texts sorted by length first, so little is padding). With idle threads
# sleeping between runs (allow_spinning 0), fewer larger runs pay fewer wake-ups: 2,000 short facts
# embedded at 800/s in batches of 8, 950/s of 32, 965/s of 64, 900/s of 128, measured quiet.
BATCH = 32
MAX_THREADS = 4  # measured upstream: more intra-op threads do not pay for a 6-12 layer BERT


def trim_heap() -> None:
    """Hand the C heap's free pages back to the OS (glibc's malloc_trim; elsewhere nothing).

    Loading a model reads its graph into memory and builds the session from it; glibc keeps what
    was freed for later allocations and the process's resident memory with it: 30 MB after loading
    the embedder and 100,000 vectors (345 -> 315 MB, measured)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        pass


def intra_op_threads() -> int:
    """Intra-op threads sized to the machine: its cores, at most 4, at least 1."""
    return max(1, min(MAX_THREADS, os.cpu_count() or 1))


def embed_threads() -> int:
    """The embedder's intra-op threads: every core but one, which is left to the FTS5 query that
    recall runs beside the query embedding (at least 1, at most 4).

    On 2 cores, one thread: inside `keepmind bench recall` at 100,000 memories recall p95 went
    19.2-19.5 -> 17.0-18.0 ms, the core the embedding no longer takes going to the lexical channel.
    A query embedded alone takes about as long on one thread as on two when the model is in the
    caches (3.5 against 3.9 ms p50), 1.0 ms longer when a scan has just evicted it (the bench's
    floor measures it that way: 6.4-6.7 against 5.4-5.6 ms p50).
    """
    return max(1, min(MAX_THREADS, (os.cpu_count() or 1) - 1))


# A long list of texts (passages) is embedded in lanes, one batch a lane at a time, as many lanes
# as the embedder's threads fit in the cores: 2,000-4,000 short facts at 1,040/s on one thread in
# two lanes against 880/s one batch at a time on two threads (the same vectors bit for bit),
# measured on 2 cores. The lanes have threads of their own, not the vector scan's
# (`vectors._run_parts`): a recall's scan must never queue behind an import's batches.
_batch_runners: ThreadPoolExecutor | None = None
_batch_runners_lock = threading.Lock()


def _runners() -> ThreadPoolExecutor:
    global _batch_runners
    with _batch_runners_lock:
        if _batch_runners is None:
            _batch_runners = ThreadPoolExecutor(max_workers=max(1, intra_op_threads() - 1),
                                                thread_name_prefix="keepmind-embed")
        return _batch_runners


def _session(path: Path, threads: int | None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or intra_op_threads()
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Idle intra-op threads sleep instead of spinning on a core after each run: recall embeds the
    # query beside the FTS5 query and the vector scan, and spinning threads slowed both (recall p95
    # over 100k memories 53 -> 35 ms when measured; the embedding's own latency barely changes).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own hierarchy
        said = str(exc)
        if "PROTOBUF" in said.upper() or "NO_SUCHFILE" in said.upper():
            why = "it is not an ONNX model file ONNX Runtime can read: damaged, cut short, or not a model"
        else:  # its own words, without the file's path (a temporary folder of an upload says nothing)
            why = f"{exc.__class__.__name__}: {said.replace(str(path), path.name)[:200]}"
        raise ModelError(f"{path.parent.name}/{path.name} could not be loaded by ONNX Runtime ({why}); "
                         "install or import the model's files again") from None


def _load(folder: Path, manifest: Manifest, threads: int | None):
    """A session on the model's prepared copy (`prepare`: its weights folded once, so the session does
    not hold them twice), or on its own file when there is no copy or the copy does not load."""
    spec = manifest.file("model.onnx")
    path = prepare.load_path(folder, spec.sha256 if spec is not None else None)
    if path != folder / "model.onnx":
        try:
            return _session(path, threads)
        except ModelError as exc:
            log.info("memory_model_prepared_unusable model=%s reason=%s", manifest.id, exc)
    return _session(folder / "model.onnx", threads)


def load_tokenizer(folder: Path, manifest: Manifest, *, pairs: bool = False):
    """The model's tokenizer with our padding and truncation (overriding any baked into the file)."""
    from tokenizers import Tokenizer
    from tokenizers.implementations import BertWordPieceTokenizer

    tokenizer_json = folder / "tokenizer.json"
    if manifest.file("tokenizer.json") is not None and tokenizer_json.is_file():
        tok = Tokenizer.from_file(str(tokenizer_json))
    else:
        tok = BertWordPieceTokenizer(str(folder / "vocab.txt"), lowercase=manifest.lowercase)
    tok.no_padding()
    tok.no_truncation()
    tok.enable_truncation(max_length=manifest.max_tokens,
                          strategy="only_second" if pairs else "longest_first")
    pad_id = tok.token_to_id("[PAD]")
    tok.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")  # longest in batch
    return tok


class _OnnxModel:
    """A loaded graph, its tokenizer and the inputs it declares."""

    def __init__(self, manifest: Manifest, folder: Path, *, pairs: bool, threads: int | None):
        self.manifest = manifest
        self.model_id = manifest.id
        self.folder = Path(folder)
        self._session = _load(self.folder, manifest, threads)
        self._inputs = {i.name: i.type for i in self._session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise ModelError(f"{manifest.id}: model.onnx has no input_ids input "
                             f"(it declares {', '.join(self._inputs)}); it is not a BERT-style model")
        self._outputs = [o.name for o in self._session.get_outputs()]
        self._tok = load_tokenizer(self.folder, manifest, pairs=pairs)
        # concurrent inferences: a lane of passage batches a core, and one more, so that a recall's
        # query never waits behind an import's batches
        self._lock = threading.Semaphore(intra_op_threads() + 1)

    def _feed(self, encodings) -> tuple[dict, np.ndarray]:
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        available = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            available["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        feed = {}
        for name, kind in self._inputs.items():
            if name not in available:
                raise ModelError(f"{self.model_id}: model.onnx needs an input {name!r} Keepmind "
                                 "cannot provide (it feeds input_ids, attention_mask, token_type_ids)")
            value = available[name]
            feed[name] = value.astype(np.int32) if kind == "tensor(int32)" else value
        return feed, mask

    def _run(self, output: str, feed: dict) -> np.ndarray:
        with self._lock:
            return self._session.run([output], feed)[0]


class Embedder(_OnnxModel):
    """Text -> L2-normalized float32 vectors (n, dims)."""

    def __init__(self, manifest: Manifest, folder: Path, *, floor: float | None = None,
                 floor_source: str | None = None, threads: int | None = None):
        threads = threads or embed_threads()
        super().__init__(manifest, folder, pairs=False, threads=threads)
        self._lanes = max(1, intra_op_threads() // threads)
        self.dims = manifest.dims
        self.floor = floor
        self.floor_source = floor_source
        self.calibration = dict(manifest.calibration)
        self.query_prefix = manifest.query_prefix
        self.pooling = manifest.pooling or "mean"
        preferred = ("last_hidden_state", "token_embeddings", "sentence_embedding")
        self._output = next((o for o in preferred if o in self._outputs), self._outputs[0])
        probe = self.embed_passages(["keepmind"])
        if self.dims is None:
            self.dims = int(probe.shape[1])
        elif probe.shape[1] != self.dims:
            raise ModelError(f"{manifest.id}: model.onnx produces {probe.shape[1]}-d vectors but the "
                             f"manifest says {self.dims}; the files do not belong to this manifest")

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Vectors for search queries (the query prefix, if the model has one, goes first)."""
        return self._embed([self.query_prefix + t for t in texts])

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Vectors for stored passages (memories); never prefixed."""
        return self._embed(list(texts))

    def _embed(self, texts: list[str]) -> np.ndarray:
        # Batches of similar length waste less on padding; the order is restored at the end.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        chunks = [[texts[i] or " " for i in order[start:start + BATCH]] for start in range(0, len(order), BATCH)]
        if not chunks:
            return np.zeros((0, self.dims or 0), dtype=np.float32)
        lanes = min(len(chunks), self._lanes)
        if lanes > 1:
            # one lane of batches a core: this thread runs the first, the embed threads the others
            def lane(k: int) -> list[np.ndarray]:
                return [self._embed_batch(chunk) for chunk in chunks[k::lanes]]
            others = [_runners().submit(lane, k) for k in range(1, lanes)]
            done = [lane(0), *(f.result() for f in others)]
            parts = [done[n % lanes][n // lanes] for n in range(len(chunks))]
        else:
            parts = [self._embed_batch(chunk) for chunk in chunks]
        vectors = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        vectors[order] = np.concatenate(parts, axis=0)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.ascontiguousarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)

    def _embed_batch(self, chunk: list[str]) -> np.ndarray:
        feed, mask = self._feed(self._tok.encode_batch(chunk))
        hidden = self._run(self._output, feed).astype(np.float32, copy=False)
        return self._pool(hidden, mask)

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if hidden.ndim == 2:  # the graph already pooled
            return hidden
        if self.pooling == "cls":
            return hidden[:, 0, :]
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


class Gate(_OnnxModel):
    """A cross-encoder: (query, memory) -> probability that the memory bears on the query."""

    def __init__(self, manifest: Manifest, folder: Path, *, threshold: float | None = None,
                 threshold_source: str | None = None, threads: int | None = None):
        super().__init__(manifest, folder, pairs=True, threads=threads)
        self.threshold = threshold
        self.threshold_source = threshold_source
        self.calibration = dict(manifest.calibration)
        self._output = "logits" if "logits" in self._outputs else self._outputs[0]
        self._query_tokens = max(8, manifest.max_tokens // 2)
        self._single = load_tokenizer(self.folder, manifest, pairs=False)  # for measuring the query

    def score(self, query: str, passages: list[str]) -> list[float]:
        """Sigmoid probabilities, one per passage, in the given order."""
        if not passages:
            return []
        query = self._clip_query(query or " ")
        feed, _ = self._feed(self._tok.encode_batch([(query, p or " ") for p in passages]))
        logits = np.asarray(self._run(self._output, feed), dtype=np.float64)
        if logits.ndim == 2 and logits.shape[1] == 2:  # two-class head: P(relevant) by softmax
            logits = logits[:, 1] - logits[:, 0]
        logits = logits.reshape(len(passages), -1)[:, 0]
        return [float(v) for v in 1.0 / (1.0 + np.exp(-logits))]

    def _clip_query(self, query: str) -> str:
        """Only the memory side is truncated, so a huge query is clipped first to leave it room."""
        enc = self._single.encode(query, add_special_tokens=False)
        if len(enc.ids) <= self._query_tokens:
            return query
        return query[:enc.offsets[self._query_tokens - 1][1]]
