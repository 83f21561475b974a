"""The vector channel: narrowed to the scope's places and to unexpired memories before its top k.

A real SQLite store and a real VectorIndex; the vectors are synthetic so the geometry is exact:
250 memories of another boundary (and 250 expired ones of this boundary) lie nearer the query
than this boundary's one relevant memory. The channel over-fetches 4 x 50 = 200 ids, so before
the index knew where memories live, they filled the whole fetch and the visible memory was lost.
"""

import numpy as np
import pytest

from keepmind.engine.clock import DAY_MS
from keepmind.engine.models import vectors as vec
from keepmind.engine.recall.candidates import VECTOR_K, VECTOR_OVERFETCH, readable_places, vector_hits


def _unit(*xs):
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def _index(quantized: bool, vectors: dict) -> vec.VectorIndex:
    """A float index, or one quantized from its first row that re-ranks by `vectors` (the stored ones)."""
    if not quantized:
        return vec.VectorIndex("m", 2)
    return vec.VectorIndex("m", 2, exact=lambda ids: {i: vectors[i] for i in ids if i in vectors}, quantize_from=1)


@pytest.mark.parametrize("quantized", [False, True], ids=["float", "quantized"])
def test_other_boundaries_and_expired_evidence_never_displace_a_visible_memory(engine, clock, quantized):
    here, there = engine.open_session("personal", "home"), engine.open_session("personal", "elsewhere")
    crowd = VECTOR_K * VECTOR_OVERFETCH + 50
    others = [engine.store(there, f"Other {i}", f"other boundary note {i}").id for i in range(crowd)]
    stale = [engine.store(here, f"Old {i}", f"old evidence {i}", memory_class="evidence").id for i in range(crowd)]
    mine = engine.store(here, "Mine", "the one memory of this boundary").id
    clock.advance(31 * DAY_MS)   # the evidence expires
    assert engine.find(here, "evidence", include_expired=True) and not engine.find(here, "evidence")

    ids = [*others, *stale, mine]
    vectors = np.stack([_unit(1, 0.01)] * (2 * crowd) + [_unit(0.5, 1.0)])
    index = _index(quantized, dict(zip(ids, vectors)))
    with engine.db.snapshot() as conn:
        index.upsert_many(ids, vectors)
        assert index.quantized == quantized
        scope, q = engine.scope(here), _unit(1, 0)
        # as before: no places, every row competes and the fetch is full of hidden memories
        assert mine not in {i for i, _ in index.search(q, VECTOR_K * VECTOR_OVERFETCH)}
        index.set_places(vec.live_places(conn, ids))
        hits = vector_hits(conn, scope, index, q, clock())
    assert [r["id"] for r, _ in hits] == [mine]
    assert hits[0][1] == pytest.approx(float(vectors[-1] @ q), abs=1e-6)   # its exact cosine
    assert readable_places(scope) == [("personal", "home"), ("team", "home")]


def test_rows_read_in_chunks_give_the_same_hits_as_reading_the_whole_fetch(engine, clock):
    """Traces (never auto-recalled) lie nearest the query in the scope's own boundary: the index
    cannot tell them apart, the rows can. Reading rows a chunk at a time must still reach the
    auto-recallable memories behind them, in cosine order."""
    here = engine.open_session("personal", "home")
    traces = [engine.store(here, f"Trace {i}", f"tool output {i}", memory_class="trace").id for i in range(150)]
    kept = [engine.store(here, f"Fact {i}", f"durable fact {i}").id for i in range(5)]
    index = vec.VectorIndex("m", 2)
    vectors = [_unit(1, 0.001 * i) for i in range(150)] + [_unit(1, 0.5 + 0.1 * i) for i in range(5)]
    with engine.db.snapshot() as conn:
        index.upsert_many([*traces, *kept], np.stack(vectors))
        index.set_places(vec.live_places(conn, [*traces, *kept]))
        hits = vector_hits(conn, engine.scope(here), index, _unit(1, 0), clock())
        one = vector_hits(conn, engine.scope(here), index, _unit(1, 0), clock(), limit=1)
    assert [r["id"] for r, _ in hits] == kept
    assert [c for _, c in hits] == sorted((c for _, c in hits), reverse=True)
    # limit 1 first asks for 9 hits, all traces; it asks again for four times as many until the
    # search runs out of rows or the first visible memory is among them
    assert [r["id"] for r, _ in one] == kept[:1]


class _Counts:
    """Term statistics of a store of `size` memories with these stem counts."""

    built = True

    def __init__(self, size, counts):
        self.size, self._counts = size, counts

    def count(self, stem):
        return self._counts.get(stem, 0)


def test_common_terms_only_rank_what_rarer_terms_find_and_small_stores_are_untouched():
    from keepmind.engine.recall.candidates import lexical_terms

    big = _Counts(100_000, {"work": 9693, "painter": 71, "weekend": 4765, "love": 6525})
    assert lexical_terms(("painter", "work"), big) == (("painter",), ("work",))
    assert lexical_terms(("work", "weekends", "love"), big) == (("weekends",), ("work", "love"))  # rarest finds
    assert lexical_terms(("work",), big) == (("work",), ())
    assert lexical_terms(("painter", "work"), None) == (("painter", "work"), ())
    # under COMMON_FLOOR memories a term is never common, whatever its share (the dev evaluations' stores)
    small = _Counts(600, {"caroline": 400, "painter": 3})
    assert lexical_terms(("caroline", "painter"), small) == (("caroline", "painter"), ())
