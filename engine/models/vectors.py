"""The vector index: per model id, the L2-normalized memory vectors of every live memory, in memory.

Loaded once at start from `memory_embeddings`, then kept current row by row as memories are
written (no reload). The index knows nothing of the visibility rule itself: callers hydrate the ids
through `engine.search.hydrate_visible`, which decides. But each row carries where its memory lives
(audience, boundary) and when it expires, and a search can be narrowed to some (audience, boundary)
pairs and to what is unexpired at `now` before its top k is taken. Without that, memories of other
boundaries, or expired evidence, could fill the top k and displace the visible ones (a filter after
a LIMIT, which DESIGN.md rules out); the caller's over-fetch only softened it. A row whose place is
unknown (written without one) is never narrowed away: the hydration still decides.

Two forms, one answer:
- below QUANTIZE_FROM rows, a float32 matrix scanned with numpy (an exact dot product per row);
- from QUANTIZE_FROM rows on (with a reader of the stored vectors), one byte per dimension: each row
  scaled to its largest component and rounded to -127..127. The scan runs on those bytes (ONNX
  Runtime's integer product: a quarter of the memory traffic, 4-5x faster than numpy's float scan at
  100,000 rows, 2.5x at 1,000,000), the narrowing is the same, and the best `k + max(k/2, 50)` rows
  are re-ranked by their exact float32 vectors read from `memory_embeddings`: the hits and their
  scores are the exact ones (the top 50 agreed with an exact scan on every bench query; `keepmind
  bench recall` reports the overlap). The float32 matrix is not kept at all: at 1,000,000 memories
  that is 1.1 GB less, at 100,000 about 110 MB.
"""

from __future__ import annotations

import itertools
import json
import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

import apsw
import numpy as np

# Where a memory lives, for narrowing a search: (audience, boundary, expires_at or None).
Place = tuple[str, str, "int | None"]
UNKNOWN = 0          # the place code of a row written without a place: never narrowed away
NEVER = np.inf       # the expiry of a row that does not expire


def scan_on_one_thread() -> None:
    """Run numpy's BLAS (the scan's matrix-vector product) on the calling thread only, process-wide.

    OpenBLAS hands a product to worker threads that keep spinning on a core after it is done: on
    this 2-core machine, with the query embedding's threads and the FTS5 query beside it, a scan of
    10,000 vectors measured 7.4 ms p50 that way and 0.6 ms on one thread; at 100,000, 15.8 and 9.9 ms
    (the whole recall trace 23.7 -> 11.8 ms at 10,000). Called when an embedder is activated.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # the scan stays correct, only slower under load
        return
    threadpool_limits(limits=1, user_api="blas")


POPULATE_FROM = 64 << 20  # bytes: a matrix this large is mapped with its pages already in place


def _rows_array(rows: int, dims: int, *, populate: bool = False, dtype=np.float32) -> np.ndarray:
    """An uninitialized (rows, dims) array of float32 (or `dtype`; rows past the count are never read).

    With `populate` (a store's load, which fills every row at once), a large one is anonymous
    memory mapped with all its pages in place (Linux's MAP_POPULATE): filling 1,000,000 rows of 384
    took 0.8-2.4 s when each 4 KB page faulted in on first write, 0.5 s so. A growing index does not
    populate: half of a doubled matrix is not used yet.
    """
    nbytes = rows * dims * np.dtype(dtype).itemsize
    if populate and nbytes >= POPULATE_FROM and hasattr(mmap, "MAP_POPULATE"):
        try:
            memory = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
            return np.frombuffer(memory, dtype=dtype).reshape(rows, dims)
        except (OSError, ValueError):  # ordinary memory then
            pass
    return np.empty((rows, dims), dtype=dtype)


SPLIT_ROWS = 32_768   # from here a scan is split across cores (below, one part takes under ~1 ms)
_scanners: ThreadPoolExecutor | None = None
_scanners_lock = threading.Lock()


def scan(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """matrix @ query, the rows split across the machine's cores (at most 4) when there are many.

    numpy's BLAS runs on one thread (`scan_on_one_thread`), so the parts run on threads of our own
    that sleep between scans instead of spinning; each row's dot product is the one the whole
    product computes (with the same blocking), so the scores are the same bit for bit.
    """
    out = np.empty(len(matrix), dtype=np.result_type(matrix, query))
    _run_parts(lambda a, b: np.dot(matrix[a:b], query, out=out[a:b]), len(matrix))
    return out


QUANTIZE_FROM = 50_000  # rows from which an index with a reader of the stored vectors keeps bytes
RERANK_MIN = 50         # a quantized search re-ranks k + max(k/2, RERANK_MIN) rows exactly

# ids -> {id: stored float32 vector}: what a quantized index re-ranks with (ids not found are absent)
ExactReader = Callable[[list[str]], dict[str, np.ndarray]]


def quantize(vectors: np.ndarray, codes: np.ndarray | None = None,
             scales: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(codes, scales) of float32 rows: code = round(x / scale) + 128 as uint8, scale = max|x| / 127,
    written into `codes` and `scales` when given (an index's own rows: no copy of them is made).

    The offset of 128 makes the codes unsigned (ONNX Runtime's fast integer kernel takes an
    unsigned left operand, with 128 as its zero point), so code - 128 is the signed -127..127 value.
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    n = len(vectors)
    codes = np.empty(vectors.shape, dtype=np.uint8) if codes is None else codes
    scales = np.empty(n, dtype=np.float32) if scales is None else scales
    if n == 0:
        return codes, scales
    peak = np.maximum(vectors.max(axis=1), -vectors.min(axis=1))
    np.copyto(scales, np.where(peak > 0, peak / np.float32(127), np.float32(1)), casting="same_kind")
    scaled = vectors * (np.float32(1) / scales)[:, None]
    np.rint(scaled, out=scaled)
    scaled += np.float32(128)
    np.copyto(codes, scaled, casting="unsafe")
    return codes, scales


_int8_session = None  # (session, the largest query value it takes exactly)
_int8_lock = threading.Lock()


def _integer_product():
    """(session, top): an ONNX Runtime session computing (codes - 128) @ q for uint8 codes and an
    int8 column q, and the largest |q| it sums exactly on this CPU (127, or 63).

    On CPUs with VNNI the kernel sums in 32 bits and any int8 query is exact. Without VNNI (AVX2
    alone) it sums pairs of products in 16 bits and saturates: 255 * 127 * 2 > 32767 (measured
    on such a machine, 712 of 32,845 dot products of unit vectors came out wrong, by up to 8,000
    units), while 255 * 63 * 2 fits. So the session is tried once on a pair that saturates there,
    and where it is not exact the query is quantized to -63..63: one bit less of the query, the
    same fast kernel (both operands unsigned are exact too, but slower there: 100,000 rows of 384
    bytes, median of 40, 24.3 ms at -63..63 against 32.6 ms unsigned, 25.1 ms inexact at -127..127).
    """
    global _int8_session
    with _int8_lock:
        if _int8_session is None:
            import onnxruntime as ort
            from onnx import TensorProto, helper

            graph = helper.make_graph(
                [helper.make_node("MatMulInteger", ["codes", "query", "zero"], ["dots"])], "scan",
                [helper.make_tensor_value_info("codes", TensorProto.UINT8, [None, None]),
                 helper.make_tensor_value_info("query", TensorProto.INT8, [None, 1])],
                [helper.make_tensor_value_info("dots", TensorProto.INT32, [None, 1])],
                [helper.make_tensor("zero", TensorProto.UINT8, [], [128])])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
            model.ir_version = 8
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1  # the parts run on our own scan threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            session = ort.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
            probe = session.run(None, {"codes": np.full((64, 64), 255, dtype=np.uint8),
                                       "query": np.full((64, 1), 127, dtype=np.int8)})[0]
            _int8_session = (session, 127 if np.all(probe == 127 * 127 * 64) else 63)
        return _int8_session


def _row_parts(n: int) -> list[tuple[int, int]]:
    """Row ranges a scan of n rows is split into across the cores (at most 4): boundaries on
    multiples of 64 rows keep every row in the kernel's block it has in the whole product, so its
    dot product is summed in the same order (the float scores are the same bit for bit)."""
    parts = min(4, os.cpu_count() or 1)
    if parts < 2 or n < SPLIT_ROWS:
        return [(0, n)]
    bounds = [0, *(int(n * i / parts) // 64 * 64 for i in range(1, parts)), n]
    return list(zip(bounds[:-1], bounds[1:]))


def _run_parts(work, n: int) -> None:
    """work(a, b) for every part of n rows, the first here and the others on the scan threads."""
    parts = _row_parts(n)
    if len(parts) == 1:
        work(0, n)
        return
    global _scanners
    with _scanners_lock:
        if _scanners is None:
            _scanners = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1) - 1,
                                           thread_name_prefix="keepmind-scan")
    futures = [_scanners.submit(work, a, b) for a, b in parts[1:]]
    work(*parts[0])
    for future in futures:
        future.result()


def scan_codes(codes: np.ndarray, scales: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Approximate cosines of quantized rows to a float32 query (itself quantized the same way)."""
    session, top = _integer_product()
    peak = float(np.abs(query).max()) if query.size else 0.0
    q_scale = peak / top if peak > 0 else 1.0
    column = np.rint(query / q_scale).astype(np.int8).reshape(-1, 1)
    dots = np.empty(len(codes), dtype=np.int32)

    def work(a: int, b: int) -> None:
        dots[a:b] = session.run(None, {"codes": codes[a:b], "query": column})[0][:, 0]
    _run_parts(work, len(codes))
    return dots.astype(np.float32) * scales * np.float32(q_scale)


class VectorIndex:
    """Vectors of one model id; thread-safe (writers lock, searches read a consistent view).

    With `exact` (a reader of the stored vectors), the index turns to bytes once it holds
    `quantize_from` rows (see the module's doc); without one it stays float32 at any size.
    """

    def __init__(self, model_id: str, dims: int, capacity: int = 1024, *, exact: ExactReader | None = None,
                 quantize_from: int | None = None):
        self.model_id = model_id
        self.dims = int(dims)
        size = max(16, capacity)
        self._exact = exact
        self._quantize_from = (QUANTIZE_FROM if quantize_from is None else quantize_from) if exact is not None else None
        quantized = self._quantize_from is not None and capacity >= self._quantize_from
        self._matrix = None if quantized else _rows_array(size, self.dims, populate=True)
        self._codes = _rows_array(size, self.dims, populate=True, dtype=np.uint8) if quantized else None
        self._scales = np.empty(size, dtype=np.float32) if quantized else None
        self._place = np.zeros(size, dtype=np.int32)          # code of (audience, boundary)
        self._expires = np.full(size, NEVER, dtype=np.float64)
        self._place_codes: dict[tuple[str, str], int] = {}
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ids)

    def has(self, item_id: str) -> bool:
        return item_id in self._rows

    @property
    def quantized(self) -> bool:
        return self._codes is not None

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (allocated rows included); the ids and their dict come on top."""
        held = self._matrix.nbytes if self._matrix is not None else self._codes.nbytes + self._scales.nbytes
        return held + self._place.nbytes + self._expires.nbytes

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._ids)

    def vector(self, item_id: str) -> np.ndarray | None:
        """The vector of an id (a quantized index reads the stored one), or None."""
        return self.vectors_of([item_id]).get(item_id)

    def vectors_of(self, item_ids: list[str]) -> dict[str, np.ndarray]:
        """id -> float32 vector for the indexed ids among `item_ids` (copies; a quantized index
        reads the stored vectors)."""
        with self._lock:
            if self._matrix is not None:
                return {i: self._matrix[self._rows[i]].copy() for i in item_ids if i in self._rows}
            wanted = [i for i in dict.fromkeys(item_ids) if i in self._rows]
        return self._read_exact(wanted) if wanted else {}

    def _read_exact(self, item_ids: list[str]) -> dict[str, np.ndarray]:
        found = self._exact(item_ids)
        return {i: v for i, v in found.items() if v.shape == (self.dims,)}

    def upsert(self, item_id: str, vector: np.ndarray, place: Place | None = None) -> None:
        self.upsert_many([item_id], np.asarray(vector, dtype=np.float32).reshape(1, -1),
                         None if place is None else [place])

    def upsert_many(self, item_ids: list[str], vectors: np.ndarray, places: list[Place] | None = None) -> None:
        """Add or replace vectors; `places` (one per id) says where each memory lives. A replaced
        row without a place keeps the one it had."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dims or len(item_ids) != len(vectors):
            raise ValueError(f"expected {len(item_ids)} vectors of {self.dims} dims, got {vectors.shape}")
        if places is not None and len(places) != len(item_ids):
            raise ValueError(f"expected {len(item_ids)} places, got {len(places)}")
        with self._lock:
            self._quantize_if_due(len(self._ids) + len(item_ids))
            for n, (item_id, vec) in enumerate(zip(item_ids, vectors)):
                row = self._rows.get(item_id)
                if row is None:
                    row = len(self._ids)
                    if row >= len(self._place):
                        self._grow()
                    self._ids.append(item_id)
                    self._rows[item_id] = row
                    self._place[row], self._expires[row] = UNKNOWN, NEVER
                self._put(row, row + 1, vec.reshape(1, -1))
                if places is not None:
                    self._set_place(row, places[n])

    def extend_new(self, item_ids: list[str], vectors: np.ndarray, places: list[Place]) -> None:
        """Append vectors of ids not yet in the index, with where each memory lives: `upsert_many`
        without its per-row work, for loading a store (an id already present is refused)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(item_ids), self.dims) or len(places) != len(item_ids):
            raise ValueError(f"expected {len(item_ids)} vectors of {self.dims} dims and as many places")
        with self._lock:
            if not self._rows.keys().isdisjoint(item_ids) or len(set(item_ids)) != len(item_ids):
                raise ValueError("extend_new takes only ids new to the index")
            start = len(self._ids)
            self._quantize_if_due(start + len(item_ids))
            while start + len(item_ids) > len(self._place):
                self._grow()
            end = start + len(item_ids)
            self._put(start, end, vectors)
            codes = self._place_codes
            pairs = [(a, b) for a, b, _ in places]
            for pair in [p for p in dict.fromkeys(pairs) if p not in codes]:
                codes[pair] = len(codes) + 1
            self._place[start:end] = list(map(codes.__getitem__, pairs))
            self._expires[start:end] = [NEVER if e is None else e for _, _, e in places]
            self._ids.extend(item_ids)
            self._rows.update(zip(item_ids, range(start, end)))

    def _put(self, start: int, end: int, vectors: np.ndarray) -> None:
        if self._matrix is not None:
            self._matrix[start:end] = vectors
        else:
            quantize(vectors, self._codes[start:end], self._scales[start:end])

    def _quantize_if_due(self, rows: int) -> None:
        """Turn a float32 index to bytes once it is to hold `quantize_from` rows (never back)."""
        if self._matrix is None or self._quantize_from is None or rows < self._quantize_from:
            return
        n, size = len(self._ids), len(self._place)
        self._codes = np.empty((size, self.dims), dtype=np.uint8)
        self._scales = np.empty(size, dtype=np.float32)
        for start in range(0, n, LOAD_CHUNK):
            end = min(n, start + LOAD_CHUNK)
            quantize(self._matrix[start:end], self._codes[start:end], self._scales[start:end])
        self._matrix = None

    def set_places(self, places: dict[str, Place]) -> None:
        """Update where indexed memories live (ids not in the index are ignored)."""
        with self._lock:
            for item_id, place in places.items():
                row = self._rows.get(item_id)
                if row is not None:
                    self._set_place(row, place)

    def _set_place(self, row: int, place: Place) -> None:
        audience, boundary, expires_at = place
        key = (audience, boundary)
        code = self._place_codes.get(key)
        if code is None:
            code = self._place_codes[key] = len(self._place_codes) + 1
        self._place[row] = code
        self._expires[row] = NEVER if expires_at is None else float(expires_at)

    def _grow(self) -> None:
        size, n = len(self._place) * 2, len(self._ids)
        if self._matrix is not None:
            self._matrix = _grown(self._matrix, size, n)
        else:
            self._codes, self._scales = _grown(self._codes, size, n), _grown(self._scales, size, n)
        self._place, self._expires = _grown(self._place, size, n, 0), _grown(self._expires, size, n, NEVER)

    def remove(self, item_id: str) -> bool:
        """Drop an id (its slot is filled by the last row: O(dims), no reload)."""
        with self._lock:
            row = self._rows.pop(item_id, None)
            if row is None:
                return False
            last = len(self._ids) - 1
            if row != last:
                moved = self._ids[last]
                if self._matrix is not None:
                    self._matrix[row] = self._matrix[last]
                else:
                    self._codes[row], self._scales[row] = self._codes[last], self._scales[last]
                self._place[row] = self._place[last]
                self._expires[row] = self._expires[last]
                self._ids[row] = moved
                self._rows[moved] = row
            self._ids.pop()
            return True

    def search(self, query_vec: np.ndarray, k: int, min_cosine: float | None = None, *,
               places: Iterable[tuple[str, str]] | None = None, now: int | None = None) -> list[tuple[str, float]]:
        """The k nearest ids by cosine (vectors are normalized, so a dot product), best first.

        `places` narrows the search to memories living in these (audience, boundary) pairs, and
        `now` to those unexpired at that time, before the top k is taken (rows of unknown place
        stay in). A quantized index takes the best `k + max(k/2, RERANK_MIN)` rows by their bytes
        and returns the best k of them by their exact stored vectors, with exact scores.
        """
        query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dims:
            raise ValueError(f"query has {query.shape[0]} dims, index {self.model_id} has {self.dims}")
        with self._lock:  # held for the scan so rows and ids stay paired
            n = len(self._ids)
            if n == 0 or k <= 0:
                return []
            quantized = self._matrix is None
            scores = (scan_codes(self._codes[:n], self._scales[:n], query) if quantized
                      else scan(self._matrix[:n], query))
            fetch = k + max(k // 2, RERANK_MIN) if quantized else k
            rows_ = _best_rows(scores, self._narrow(n, places, now), fetch)
            out = [(self._ids[i], float(scores[i])) for i in rows_]
        if quantized and out:
            out = self._rerank(out, query, k)
        if min_cosine is not None:
            out = [hit for hit in out if hit[1] >= min_cosine]
        return out

    def _rerank(self, hits: list[tuple[str, float]], query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The best k of approximate hits by their stored vectors' exact cosines. A hit whose stored
        vector is not found (written after the reader's snapshot began) keeps its approximate score."""
        found = self._read_exact([i for i, _ in hits])
        if found:
            ids = [i for i, _ in hits if i in found]
            exact = np.stack([found[i] for i in ids]) @ query
            scored = dict(zip(ids, map(float, exact)))
        else:
            scored = {}
        ranked = [(i, scored.get(i, approx)) for i, approx in hits]
        ranked.sort(key=lambda hit: -hit[1])
        return ranked[:k]

    def _narrow(self, n: int, places, now) -> np.ndarray | None:
        """A mask of the rows a search may return, or None when nothing is narrowed away."""
        keep = None
        if places is not None:
            wanted = [self._place_codes[p] for p in places if p in self._place_codes]
            if len(wanted) < len(self._place_codes):  # some place is not wanted
                keep = np.isin(self._place[:n], [UNKNOWN, *wanted])
        if now is not None:
            alive = self._expires[:n] > now
            keep = alive if keep is None else keep & alive
        return None if keep is None or keep.all() else keep


def _grown(rows: np.ndarray, size: int, n: int, fill=None) -> np.ndarray:
    """`rows` in an array of `size` rows: its first n copied, the others `fill` (uninitialized without)."""
    shape = (size, *rows.shape[1:])
    out = np.empty(shape, dtype=rows.dtype) if fill is None else np.full(shape, fill, dtype=rows.dtype)
    out[:n] = rows[:n]
    return out


def _best_rows(scores: np.ndarray, keep: np.ndarray | None, k: int) -> np.ndarray:
    """Rows of the k best scores among those `keep` allows (all when None), best first; equal
    scores in row order (argpartition leaves ties in no set order, so the same vectors held by a
    byte index and a float one could come back in either order)."""
    if keep is not None:
        candidates = np.flatnonzero(keep)
        scores_kept = scores[candidates]
    else:
        candidates, scores_kept = None, scores
    m = len(scores_kept)
    if m == 0:
        return np.arange(0)
    k = min(k, m)
    top = np.argpartition(-scores_kept, k - 1)[:k] if k < m else np.arange(m)
    top = top[np.lexsort((top, -scores_kept[top]))]
    return top if candidates is None else candidates[top]


def exact_search(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """Rows of the k best exact cosines over a whole float32 matrix (a bench's floor and yardstick)."""
    return _best_rows(scan(matrix, np.asarray(query, dtype=np.float32)), None, k)


# -- storage (memory_embeddings) ----------------------------------------------------------------

# Every live memory (deleted documents, tombstones and superseded records are not), with its text,
# where it lives (the index narrows searches by that) and the hash its row keeps of its text (every
# writer sets it from `content_hash(title, body)`, the key its vector is stored under).
LIVE_SQL = (
    "SELECT document_id AS id, title, body, audience, boundary, expires_at, content_hash FROM memory_documents"
    " WHERE deleted_at IS NULL"
    " UNION ALL SELECT r.record_id, r.title, r.body, r.audience, r.boundary, r.expires_at, r.content_hash"
    " FROM memory_records r"
    " WHERE r.is_tombstone = 0"
    " AND NOT EXISTS (SELECT 1 FROM memory_records s WHERE s.supersedes_record_id = r.record_id)"
)
LIVE_TEXT_SQL = f"SELECT id, title, body FROM ({LIVE_SQL})"
# Live memories whose text has no vector for a model (?) at its content hash.
STALE_SQL = (f"SELECT live.id, live.title, live.body FROM ({LIVE_SQL}) live"
             " LEFT JOIN memory_embeddings e ON e.item_id = live.id AND e.model_id = ?"
             " WHERE e.content_hash IS NULL OR e.content_hash != live.content_hash ORDER BY 1")


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes, dims: int) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4", count=dims)


# What an index holds: every live memory's stored vector of a model (?) of its dims (?), with where
# the memory lives.
INDEXED_SQL = (f"SELECT e.item_id, e.vector, live.audience, live.boundary, live.expires_at"
               f" FROM memory_embeddings e JOIN ({LIVE_SQL}) live"
               " ON live.id = e.item_id WHERE e.model_id = ? AND e.dims = ?")


def load_index(conn: apsw.Connection, model_id: str, dims: int, *, exact: ExactReader | None = None,
               quantize_from: int | None = None) -> VectorIndex:
    """An index of every live memory's stored vector for this model (any content hash). With `exact`
    (see `VectorIndex`), a store of `quantize_from` vectors or more loads straight into bytes."""
    count = 0
    for (n,) in conn.execute("SELECT COUNT(*) FROM memory_embeddings WHERE model_id=?", (model_id,)):
        count = n
    index = VectorIndex(model_id, dims, capacity=count + 1024, exact=exact, quantize_from=quantize_from)
    for ids, vectors, places in _indexed_chunks(conn, model_id, index.dims):
        index.extend_new(ids, vectors, places)
    return index


LOAD_CHUNK = 4096


def _indexed_chunks(conn: apsw.Connection, model_id: str, dims: int):
    """What an index holds (INDEXED_SQL), LOAD_CHUNK rows at a time: (ids, float32 vectors, places).

    Each chunk is decoded with one join of its blobs: never a Python array per vector, nor a second
    copy of the whole matrix (at 100,000 memories those held 150 MB after a load). The rows are
    transposed by zip and handed over whole: no Python work per row.
    """
    cursor = conn.execute(INDEXED_SQL, (model_id, dims))
    while chunk := list(itertools.islice(cursor, LOAD_CHUNK)):
        ids, blobs, audiences, boundaries, expiries = zip(*chunk)
        yield (list(ids), np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), dims),
               list(zip(audiences, boundaries, expiries)))


def live_matrix(conn: apsw.Connection, model_id: str, dims: int) -> tuple[list[str], np.ndarray]:
    """(ids, float32 matrix) of every live memory's stored vector for this model: the rows an index
    holds, exactly as stored (a bench's yardstick for a quantized index)."""
    ids: list[str] = []
    parts: list[np.ndarray] = []
    for chunk_ids, vectors, _ in _indexed_chunks(conn, model_id, dims):
        ids += chunk_ids
        parts.append(vectors)
    return ids, (np.concatenate(parts).astype(np.float32, copy=False) if parts
                 else np.empty((0, dims), dtype=np.float32))


def read_vectors(conn: apsw.Connection, model_id: str, ids: list[str]) -> dict[str, np.ndarray]:
    """id -> the stored float32 vector of this model, as written (what a quantized index re-ranks
    with); ids without one are absent."""
    out: dict[str, np.ndarray] = {}
    for item_id, blob in conn.execute(
            "SELECT item_id, vector FROM memory_embeddings WHERE model_id = ?"
            " AND item_id IN (SELECT value FROM json_each(?))", (model_id, json.dumps(ids))):
        out[item_id] = np.frombuffer(blob, dtype="<f4").astype(np.float32, copy=False)
    return out


def live_places(conn: apsw.Connection, ids: list[str]) -> dict[str, Place]:
    """id -> (audience, boundary, expires_at) for the ids that are live memories."""
    return {i: place for i, (_, _, place) in live_items(conn, ids).items()}


def save_vectors(conn: apsw.Connection, model_id: str, items: list[tuple[str, str]], vectors: np.ndarray,
                 now: int) -> None:
    """Write (item id, content hash) vectors for a model; replaces an older vector of the same pair."""
    for (item_id, chash), vec in zip(items, vectors):
        conn.execute(
            "INSERT INTO memory_embeddings(item_id, model_id, content_hash, dims, vector, created_at)"
            " VALUES (?,?,?,?,?,?) ON CONFLICT(item_id, model_id) DO UPDATE SET"
            " content_hash=excluded.content_hash, dims=excluded.dims, vector=excluded.vector,"
            " created_at=excluded.created_at",
            (item_id, model_id, chash, int(vec.shape[0]), to_blob(vec), now),
        )


def live_items(conn: apsw.Connection, ids: list[str]) -> dict[str, tuple[str, str, Place]]:
    """id -> (title, body, place) for the ids that are live memories (deleted/superseded ones are absent)."""
    out: dict[str, tuple[str, str, Place]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for item_id, title, body, audience, boundary, expires_at in conn.execute(
                f"SELECT id, title, body, audience, boundary, expires_at FROM ({LIVE_SQL}) WHERE id IN ({marks})",
                chunk):
            out[item_id] = (title, body, (audience, boundary, expires_at))
    return out


def stored_hashes(conn: apsw.Connection, model_id: str, ids: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for item_id, chash in conn.execute(
                f"SELECT item_id, content_hash FROM memory_embeddings WHERE model_id=? AND item_id IN ({marks})",
                (model_id, *chunk)):
            out[item_id] = chash
    return out


def gaps(conn: apsw.Connection, model_id: str, *, force: bool = False) -> list[tuple[str, str, str]]:
    """(id, title, body) of live memories lacking a vector for this model at their content hash.

    Compared in SQL with the hash each memory row keeps of its text: at 100,000 memories reading
    every text and hashing it in Python took 0.57 s of the first seconds after a start.
    """
    if force:
        return [tuple(r) for r in conn.execute(LIVE_TEXT_SQL + " ORDER BY 1")]
    return [tuple(r) for r in conn.execute(STALE_SQL, (model_id,))]


def embedded_ids(conn: apsw.Connection, ids: list[str]) -> set[str]:
    """The ids among `ids` that have a vector under any model."""
    found: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        found.update(r[0] for r in conn.execute(
            f"SELECT DISTINCT item_id FROM memory_embeddings WHERE item_id IN ({marks})", chunk))
    return found


def unembedded_since(conn: apsw.Connection, model_id: str, marks: tuple[int, int]) -> bool:
    """Is any live memory written after `marks` (see store.watermarks) without a vector of this model?

    Cheap however large the store: it reads only the rows above the marks. It is how a running
    Keepmind notices memories another process wrote (`keepmind import`)."""
    doc_mark, rec_mark = marks
    found = conn.execute(
        "SELECT 1 FROM memory_documents d WHERE d.rowid > ? AND d.deleted_at IS NULL AND NOT EXISTS"
        " (SELECT 1 FROM memory_embeddings e WHERE e.item_id = d.document_id AND e.model_id = ?)"
        " UNION ALL SELECT 1 FROM memory_records r WHERE r.rowid > ? AND r.is_tombstone = 0 AND NOT EXISTS"
        " (SELECT 1 FROM memory_embeddings e WHERE e.item_id = r.record_id AND e.model_id = ?)"
        " AND NOT EXISTS (SELECT 1 FROM memory_records s WHERE s.supersedes_record_id = r.record_id)"
        " LIMIT 1", (doc_mark, model_id, rec_mark, model_id)).fetchall()
    return bool(found)


def coverage(conn: apsw.Connection, model_id: str | None) -> dict:
    """Counts for doctor: live memories, those embedded under this model at their current hash,
    and distinct items embedded only under other models."""
    live = 0
    for (n,) in conn.execute(f"SELECT COUNT(*) FROM ({LIVE_SQL})"):
        live = n
    current = 0
    if model_id:  # as `gaps`: the rows' own hashes, compared in SQL; each live row looked up by its key (an
        # inner join let the planner index every live row by hash on each call, SQLITE_WARNING_AUTOINDEX)
        for (n,) in conn.execute(
                f"SELECT COUNT(*) FROM ({LIVE_SQL}) live WHERE EXISTS (SELECT 1 FROM memory_embeddings e"
                " WHERE e.item_id = live.id AND e.model_id = ? AND e.content_hash = live.content_hash)",
                (model_id,)):
            current = n
    other = 0
    for (n,) in conn.execute(
            "SELECT COUNT(DISTINCT item_id) FROM memory_embeddings WHERE model_id != ?", (model_id or "",)):
        other = n
    return {"live": live, "embedded_current": current, "other_model_items": other}
