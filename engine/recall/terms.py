"""Document frequencies of stems over the live store: what makes a query word rare.

The offline gate asks how much of the query's rare content a memory covers; rarity is measured
against this store (a word in half the memories, like a user's own name, carries little), not
against a general English list. Kept in memory: built on first use from the live memories, then
updated by the engine's write listener (deletions are not subtracted; a slightly high count only
makes a word look a little more common). The counts are saved in the store (`recall_term_stats`:
stems and their counts, no memory text) so that a start counts only what was written since; a
snapshot older than a week is not trusted and everything is counted again, so the counts of
deleted memories do not outlive it by more than that.
"""

from __future__ import annotations

import json
import math
import threading
import zlib
from collections import Counter
from dataclasses import dataclass

from ..stance import standing_and_lasting
from ..store import watermarks
from .plan import content_stems


def memory_stems(title: str, body: str, *keywords: str) -> set[str]:
    """The content stems of a memory: its title, body and its own keywords (aliases and facets,
    which the observer writes as retrieval keys and the lexical channel already searches)."""
    return set(content_stems("\n".join([title or "", body or "", *(k or "" for k in keywords)])))


def row_stems(row: dict) -> set[str]:
    return memory_stems(row.get("title", ""), row.get("body", ""), row.get("aliases", ""), row.get("facets", ""))


def row_words(row: dict) -> tuple[frozenset[str], bool, bool]:
    """What ranking and the gate read of a memory's text: its content stems, whether it is a
    standing statement (`stance.standing`) and whether it is lasting (`stance.lasting`)."""
    return frozenset(row_stems(row)), *standing_and_lasting(f"{row.get('title', '')}\n{row.get('body', '')}")


def keyword_stems(row: dict) -> set[str]:
    """The stems of a memory's aliases and facets alone (for a caller that has read its text)."""
    return memory_stems("", "", row.get("aliases", ""), row.get("facets", ""))


class TermStats:
    """Stem -> number of memories containing it, over every live memory.

    A build counts the live memories up to the store's highest document and record rowids (its
    marks); memories written later come through `add`. A memory already counted (at or below the
    marks, or added since) is not counted again when a revision of it is written. What a build
    counted can be saved (`snapshot`) and a later build starts from it (`saved`), counting only the
    memories written since: at 100,000 memories a full count took 0.74 s of a cold start's 2.3 s,
    at 1,000,000 8.2 s. The store rowids only grow (memories are never removed from their tables,
    a deletion marks them), so the marks say exactly what a snapshot covers.
    """

    def __init__(self):
        self._df: Counter = Counter()
        self._n = 0
        self._lock = threading.Lock()
        self._built = False
        self._marks = (0, 0)            # highest document and record rowids the build counted
        self._new: set[str] = set()     # memories counted since the build
        self.restored = False           # the last build started from a snapshot

    def __getstate__(self) -> dict:  # the lock stays behind: a copy (a saved calibration run) gets its own
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._built

    @property
    def size(self) -> int:
        return self._n

    def build(self, conn, saved: bytes | None = None, *, now: int = 0) -> bytes | None:
        """Count every live memory once (idempotent); with `saved` (a `snapshot` of an earlier build
        of this store, younger than SNAPSHOT_MAX_AGE_MS at `now`), only those written since it.

        Returns a snapshot worth saving (after a full count, or when many memories came since the
        saved one), else None.
        """
        with self._lock:
            if self._built:
                return None
            marks = watermarks(conn)
            base = _restore(saved, marks, now)
            start = (0, 0)
            if base is not None:
                self._df, self._n, start = base
            counted = 0
            for title, body, aliases, facets in conn.execute(COUNT_SQL, (*start, *marks)):
                self._n += 1
                self._df.update(memory_stems(title, body, aliases, facets))
                counted += 1
            self._marks, self._built, self.restored = marks, True, base is not None
            if base is None or counted > max(SNAPSHOT_STALE_AFTER, self._n // 20):
                return _dump(self._df, self._n, marks, now)
            return None

    def add(self, memory_id: str, title: str, body: str, *keywords: str, rowid: tuple[str, int] | None = None) -> None:
        """Count a memory written after the build; `rowid` (its table, "document" or "record", and
        rowid) tells a memory the build counted from a new one."""
        with self._lock:
            if not self._built:
                return
            if rowid is not None and rowid[1] <= self._marks[0 if rowid[0] == "document" else 1]:
                return  # a revision of a memory the build counted: its words are mostly the same
            self._add(memory_id, title, body, *keywords)

    def _add(self, memory_id: str, title: str, body: str, *keywords: str) -> None:
        if memory_id in self._new:
            return  # a revision of a memory counted since the build
        self._new.add(memory_id)
        self._n += 1
        self._df.update(memory_stems(title, body, *keywords))

    def idf(self, stem: str, min_memories: int = 0) -> float:
        """log((N + 1) / (df + 0.5)): a word no memory holds is as rare as it gets.

        N is at least `min_memories`: in a store of a handful of memories every unseen query word
        would otherwise outweigh the words a memory does hold (absent 2.1 vs present 1.0 at N=3,
        against 6.9 vs 5.8 at N=500), and the gate calibrated on larger stores would refuse almost
        everything on a new install.
        """
        n = max(self._n, min_memories)
        return math.log((n + 1) / (self._df.get(stem, 0) + 0.5))

    def weights(self, stems, min_memories: int = 0) -> dict[str, float]:
        return {s: self.idf(s, min_memories) for s in stems}

    def holds(self, stem: str) -> bool:
        """Whether any memory of the store contains this stem."""
        return self._df.get(stem, 0) > 0

    def count(self, stem: str) -> int:
        """How many memories contain this stem (0 before the build)."""
        return self._df.get(stem, 0)

    def floored(self, min_memories: int) -> "FlooredTermStats":
        return FlooredTermStats(self, int(min_memories or 0))


# -- snapshots ---------------------------------------------------------------------------------

SNAPSHOT_VERSION = 1
SNAPSHOT_MAX_AGE_MS = 7 * 24 * 3600 * 1000  # then a full count: deletions since are not subtracted
SNAPSHOT_STALE_AFTER = 1000                 # memories written since a snapshot before a new one is saved

# The live memories with rowids in (start, mark], documents then records.
COUNT_SQL = ("SELECT title, body, aliases, facets FROM memory_documents"
             " WHERE deleted_at IS NULL AND rowid > ?1 AND rowid <= ?3"
             " UNION ALL SELECT r.title, r.body, r.aliases, r.facets FROM memory_records r"
             " WHERE r.is_tombstone = 0 AND r.rowid > ?2 AND r.rowid <= ?4")


def _dump(df: Counter, n: int, marks: tuple[int, int], now: int) -> bytes:
    body = {"version": SNAPSHOT_VERSION, "n": n, "marks": list(marks), "saved_at": now, "df": df}
    return zlib.compress(json.dumps(body, separators=(",", ":")).encode(), 6)


def _restore(saved: bytes | None, marks: tuple[int, int], now: int) -> tuple[Counter, int, tuple[int, int]] | None:
    """(df, n, marks) of a usable snapshot: this version, not older than SNAPSHOT_MAX_AGE_MS, and not
    ahead of the store (a store replaced by an older copy has lower marks)."""
    if not saved:
        return None
    try:
        body = json.loads(zlib.decompress(saved))
        at = tuple(int(m) for m in body["marks"])
        if (body.get("version") != SNAPSHOT_VERSION or len(at) != 2 or at[0] > marks[0] or at[1] > marks[1]
                or not 0 <= now - int(body.get("saved_at", 0)) <= SNAPSHOT_MAX_AGE_MS):
            return None
        return Counter({str(k): int(v) for k, v in body["df"].items()}), int(body["n"]), at
    except (ValueError, KeyError, TypeError, zlib.error):
        return None


def load_snapshot(conn) -> bytes | None:
    rows = conn.execute("SELECT body FROM recall_term_stats WHERE id = 1").fetchall()
    return bytes(rows[0][0]) if rows else None


def save_snapshot(conn, snapshot: bytes, now: int) -> None:
    conn.execute("INSERT INTO recall_term_stats(id, body, saved_at) VALUES (1, ?, ?)"
                 " ON CONFLICT(id) DO UPDATE SET body=excluded.body, saved_at=excluded.saved_at", (snapshot, now))


@dataclass(frozen=True)
class FlooredTermStats:
    """Term statistics read as if the store held at least `min_memories` memories."""

    stats: TermStats
    min_memories: int

    @property
    def size(self) -> int:
        return self.stats.size

    def weights(self, stems) -> dict[str, float]:
        return self.stats.weights(stems, self.min_memories)

    def holds(self, stem: str) -> bool:
        return self.stats.holds(stem)


def collection_floor(calibration: dict | None) -> int:
    """The smallest store the active model's gate was calibrated on (0: no floor)."""
    try:
        return max(0, int(((calibration or {}).get("term_stats") or {}).get("min_memories") or 0))
    except (TypeError, ValueError):
        return 0
