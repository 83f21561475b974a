"""The vector index: per model id, an in-memory float32 matrix of L2-normalized memory vectors.

Loaded once at start from `memory_embeddings`, then kept current row by row as memories are
written (no reload). Search is a brute-force dot product with numpy (100k x 384 float32 scans in
~10 ms; float16 is 18-40x slower in numpy, so memory stays float32). The index knows nothing of
visibility rule itself: callers hydrate the ids through `engine.search.hydrate_visible`, which
decides. But each row carries where its memory lives (audience, boundary) and when it expires, and
a search can be narrowed to some (audience, boundary) pairs and to what is unexpired at `now`
before its top k is taken. Without that, memories of other boundaries, or expired evidence, could
fill the top k and displace the visible ones (a filter after a LIMIT, which DESIGN.md rules out);
the caller's over-fetch only softened it. A row whose place is unknown (written without one) is
never narrowed away: the hydration still decides.
"""

from __future__ import annotations

import itertools
import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

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


def _rows_array(rows: int, dims: int, *, populate: bool = False) -> np.ndarray:
    """An uninitialized float32 (rows, dims) array (rows past the count are never read).

    With `populate` (a store's load, which fills every row at once), a large one is anonymous
    memory mapped with all its pages in place (Linux's MAP_POPULATE): filling 1,000,000 rows of 384
    took 0.8-2.4 s when each 4 KB page faulted in on first write, 0.5 s so. A growing index does not
    populate: half of a doubled matrix is not used yet.
    """
    nbytes = rows * dims * 4
    if populate and nbytes >= POPULATE_FROM and hasattr(mmap, "MAP_POPULATE"):
        try:
            memory = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
            return np.frombuffer(memory, dtype=np.float32).reshape(rows, dims)
        except (OSError, ValueError):  # ordinary memory then
            pass
    return np.empty((rows, dims), dtype=np.float32)


SPLIT_ROWS = 32_768   # from here a scan is split across cores (below, one part takes under ~1 ms)
_scanners: ThreadPoolExecutor | None = None
_scanners_lock = threading.Lock()


def scan(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """matrix @ query, the rows split across the machine's cores (at most 4) when there are many.

    numpy's BLAS runs on one thread (`scan_on_one_thread`), so the parts run on threads of our own
    that sleep between scans instead of spinning; each row's dot product is the one the whole
    product computes (with the same blocking), so the scores are the same bit for bit.
    """
    parts = min(4, os.cpu_count() or 1)
    n = len(matrix)
    if parts < 2 or n < SPLIT_ROWS:
        return matrix @ query
    global _scanners
    with _scanners_lock:
        if _scanners is None:
            _scanners = ThreadPoolExecutor(max_workers=parts - 1, thread_name_prefix="keepmind-scan")
    out = np.empty(n, dtype=np.result_type(matrix, query))
    # Boundaries on multiples of 64 rows keep every row in the kernel's block it has in the whole
    # product, so its dot product is summed in the same order.
    bounds = [0, *(int(n * i / parts) // 64 * 64 for i in range(1, parts)), n]
    futures = [_scanners.submit(np.dot, matrix[a:b], query, out[a:b]) for a, b in zip(bounds[1:-1], bounds[2:])]
    np.dot(matrix[:bounds[1]], query, out=out[:bounds[1]])
    for future in futures:
        future.result()
    return out


class VectorIndex:
    """Vectors of one model id; thread-safe (writers lock, searches read a consistent view)."""

    def __init__(self, model_id: str, dims: int, capacity: int = 1024):
        self.model_id = model_id
        self.dims = int(dims)
        size = max(16, capacity)
        self._matrix = _rows_array(size, self.dims, populate=True)
        self._place = np.zeros(size, dtype=np.int32)          # code of (audience, boundary)
        self._expires = np.full(size, NEVER, dtype=np.float64)
        self._codes: dict[tuple[str, str], int] = {}
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ids)

    def has(self, item_id: str) -> bool:
        return item_id in self._rows

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (allocated rows included); the ids and their dict come on top."""
        return self._matrix.nbytes + self._place.nbytes + self._expires.nbytes

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._ids)

    def vector(self, item_id: str) -> np.ndarray | None:
        with self._lock:
            row = self._rows.get(item_id)
            return None if row is None else self._matrix[row].copy()

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
            for n, (item_id, vec) in enumerate(zip(item_ids, vectors)):
                row = self._rows.get(item_id)
                if row is None:
                    row = len(self._ids)
                    if row >= len(self._matrix):
                        self._grow()
                    self._ids.append(item_id)
                    self._rows[item_id] = row
                    self._place[row], self._expires[row] = UNKNOWN, NEVER
                self._matrix[row] = vec
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
            while start + len(item_ids) > len(self._matrix):
                self._grow()
            end = start + len(item_ids)
            self._matrix[start:end] = vectors
            codes = self._codes
            pairs = [(a, b) for a, b, _ in places]
            for pair in [p for p in dict.fromkeys(pairs) if p not in codes]:
                codes[pair] = len(codes) + 1
            self._place[start:end] = list(map(codes.__getitem__, pairs))
            self._expires[start:end] = [NEVER if e is None else e for _, _, e in places]
            self._ids.extend(item_ids)
            self._rows.update(zip(item_ids, range(start, end)))

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
        code = self._codes.get(key)
        if code is None:
            code = self._codes[key] = len(self._codes) + 1
        self._place[row] = code
        self._expires[row] = NEVER if expires_at is None else float(expires_at)

    def _grow(self) -> None:
        size = len(self._matrix) * 2
        n = len(self._ids)
        matrix = _rows_array(size, self.dims)
        matrix[:n] = self._matrix[:n]
        place = np.zeros(size, dtype=np.int32)
        place[:n] = self._place[:n]
        expires = np.full(size, NEVER, dtype=np.float64)
        expires[:n] = self._expires[:n]
        self._matrix, self._place, self._expires = matrix, place, expires

    def remove(self, item_id: str) -> bool:
        """Drop an id (its slot is filled by the last row: O(dims), no reload)."""
        with self._lock:
            row = self._rows.pop(item_id, None)
            if row is None:
                return False
            last = len(self._ids) - 1
            if row != last:
                moved = self._ids[last]
                self._matrix[row] = self._matrix[last]
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
        stay in).
        """
        query = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dims:
            raise ValueError(f"query has {query.shape[0]} dims, index {self.model_id} has {self.dims}")
        with self._lock:  # held for the scan (~10 ms at 100k x 384) so rows and ids stay paired
            n = len(self._ids)
            if n == 0 or k <= 0:
                return []
            scores = scan(self._matrix[:n], query)
            keep = self._narrow(n, places, now)
            if keep is not None:
                candidates = np.flatnonzero(keep)
                scores_kept = scores[candidates]
            else:
                candidates, scores_kept = None, scores
            m = len(scores_kept)
            if m == 0:
                return []
            k = min(k, m)
            top = np.argpartition(-scores_kept, k - 1)[:k] if k < m else np.arange(m)
            top = top[np.argsort(-scores_kept[top], kind="stable")]
            rows_ = top if candidates is None else candidates[top]
            out = [(self._ids[i], float(scores[i])) for i in rows_]
        if min_cosine is not None:
            out = [hit for hit in out if hit[1] >= min_cosine]
        return out

    def _narrow(self, n: int, places, now) -> np.ndarray | None:
        """A mask of the rows a search may return, or None when nothing is narrowed away."""
        keep = None
        if places is not None:
            wanted = [self._codes[p] for p in places if p in self._codes]
            if len(wanted) < len(self._codes):  # some place is not wanted
                keep = np.isin(self._place[:n], [UNKNOWN, *wanted])
        if now is not None:
            alive = self._expires[:n] > now
            keep = alive if keep is None else keep & alive
        return None if keep is None or keep.all() else keep


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


def load_index(conn: apsw.Connection, model_id: str, dims: int) -> VectorIndex:
    """An index of every live memory's stored vector for this model (any content hash)."""
    count = 0
    for (n,) in conn.execute("SELECT COUNT(*) FROM memory_embeddings WHERE model_id=?", (model_id,)):
        count = n
    index = VectorIndex(model_id, dims, capacity=count + 1024)
    # In chunks, each decoded with one join of its blobs: never a Python array per vector, nor a
    # second copy of the whole matrix (at 100,000 memories those held 150 MB after the load). The
    # rows are transposed by zip and handed over whole: no Python work per row.
    cursor = conn.execute(
        f"SELECT e.item_id, e.vector, live.audience, live.boundary, live.expires_at"
        f" FROM memory_embeddings e JOIN ({LIVE_SQL}) live"
        " ON live.id = e.item_id WHERE e.model_id = ? AND e.dims = ?", (model_id, dims))
    while chunk := list(itertools.islice(cursor, LOAD_CHUNK)):
        ids, blobs, audiences, boundaries, expiries = zip(*chunk)
        vectors = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), index.dims)
        index.extend_new(list(ids), vectors, list(zip(audiences, boundaries, expiries)))
    return index


LOAD_CHUNK = 4096


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
    if model_id:  # as `gaps`: the rows' own hashes, compared in SQL
        for (n,) in conn.execute(
                f"SELECT COUNT(*) FROM ({LIVE_SQL}) live JOIN memory_embeddings e ON e.item_id = live.id"
                " AND e.model_id = ? AND e.content_hash = live.content_hash", (model_id,)):
            current = n
    other = 0
    for (n,) in conn.execute(
            "SELECT COUNT(DISTINCT item_id) FROM memory_embeddings WHERE model_id != ?", (model_id or "",)):
        other = n
    return {"live": live, "embedded_current": current, "other_model_items": other}
