"""Document frequencies of stems over the live store: what makes a query word rare.

The offline gate asks how much of the query's rare content a memory covers; rarity is measured
against this store (a word in half the memories, like a user's own name, carries little), not
against a general English list. Kept in memory: built on first use from the live memories, then
updated by the engine's write listener (deletions are not subtracted; a slightly high count only
makes a word look a little more common).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from dataclasses import dataclass

from .plan import content_stems


def memory_stems(title: str, body: str, *keywords: str) -> set[str]:
    """The content stems of a memory: its title, body and its own keywords (aliases and facets,
    which the observer writes as retrieval keys and the lexical channel already searches)."""
    return set(content_stems("\n".join([title or "", body or "", *(k or "" for k in keywords)])))


def row_stems(row: dict) -> set[str]:
    return memory_stems(row.get("title", ""), row.get("body", ""), row.get("aliases", ""), row.get("facets", ""))


def keyword_stems(row: dict) -> set[str]:
    """The stems of a memory's aliases and facets alone (for a caller that has read its text)."""
    return memory_stems("", "", row.get("aliases", ""), row.get("facets", ""))


class TermStats:
    """Stem -> number of memories containing it, over every live memory."""

    def __init__(self):
        self._df: Counter = Counter()
        self._n = 0
        self._lock = threading.Lock()
        self._built = False
        self._seen: set[str] = set()

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

    def build(self, conn) -> None:
        """Count every live memory once (idempotent)."""
        with self._lock:
            if self._built:
                return
            sql = ("SELECT document_id, title, body, aliases, facets FROM memory_documents WHERE deleted_at IS NULL"
                   " UNION ALL SELECT r.record_id, r.title, r.body, r.aliases, r.facets FROM memory_records r"
                   " WHERE r.is_tombstone = 0")
            for memory_id, title, body, aliases, facets in conn.execute(sql):
                self._add(memory_id, title, body, aliases, facets)
            self._built = True

    def add(self, memory_id: str, title: str, body: str, *keywords: str) -> None:
        with self._lock:
            if self._built:
                self._add(memory_id, title, body, *keywords)

    def _add(self, memory_id: str, title: str, body: str, *keywords: str) -> None:
        if memory_id in self._seen:
            return  # a revision of a counted document: its words are mostly the same
        self._seen.add(memory_id)
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

    def floored(self, min_memories: int) -> "FlooredTermStats":
        return FlooredTermStats(self, int(min_memories or 0))


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
