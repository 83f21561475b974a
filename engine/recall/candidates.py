"""Candidate gathering: FTS5 matches and the nearest vectors, merged, through the visibility predicate.

I/O only; no scoring beyond the raw channel scores. Vector hits come from the active model's
in-memory index, which holds every scope's memories: the search is narrowed to the scope's
(audience, boundary) pairs and to unexpired memories before its top k is taken, so other
boundaries never displace this one's memories; the hits are then over-fetched (for what the index
does not narrow: traces, manual and never recall modes, secrets) and hydrated with
`engine.search.hydrate_visible` (the same predicate as every other read, which decides) before
the top 50 are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import search
from ..models import vectors as vec
from ..policy import Scope
from .rank import Candidate
from .stem import stem

VECTOR_K = 50
LEXICAL_K = 50
VECTOR_OVERFETCH = 4
HYDRATE_MARGIN = 8  # rows read beyond those still missing, for the few a finer visibility rule drops
RECALL_MODES = ("auto", "searchable")  # manual and never are not auto-recalled


@dataclass(frozen=True)
class Pool:
    """What the channels found: the merged candidates and how many came from each."""

    candidates: list[Candidate]
    lexical_count: int
    vector_count: int
    coverage_gaps: tuple[str, ...]   # ids with no vector under the active model
    # id -> (content stems, standing, lasting) of the candidates worked out while the other channel ran
    words: dict[str, tuple[frozenset[str], bool, bool]] = field(default_factory=dict)


# A term held by more than this share of the store's memories, and by more than COMMON_FLOOR of
# them, is common (see `lexical_terms`). No store of the dev evaluations has a term that common.
COMMON_SHARE = 0.02
COMMON_FLOOR = 2_000
SPLIT_GAIN = 2


def lexical_terms(terms: tuple[str, ...], stats) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(terms that find memories, common terms that only rank them) for the lexical channel.

    FTS5 ranks by scoring every match of every term, 0.4 us a match on a quiet machine and three
    times that beside the query embedding and the vector scan: "work" in 9,700 of 100,000 memories
    cost the slowest recalls 16 ms. So when a message has rarer terms, its common ones only add to
    the scores of the memories those match (`search.lexical_candidates`' `rank_only`: the same
    scores as one query over all terms); a memory that holds nothing but a common word is an
    arbitrary pick among thousands, left to the vector channel. In a message of common terms
    alone, the rarest one finds. When the common terms match fewer than SPLIT_GAIN times as many
    memories as the others, one query over all of them is cheaper and is kept.
    """
    if stats is None or not getattr(stats, "built", False) or len(terms) < 2:
        return terms, ()
    cutoff = max(COMMON_FLOOR, COMMON_SHARE * stats.size)
    counts = {t: stats.count(stem(t)) for t in terms}
    common = [t for t in terms if counts[t] > cutoff]
    if len(common) == len(terms):
        common.remove(min(terms, key=counts.__getitem__))
    finding = tuple(t for t in terms if t not in common)
    # Two queries over the rarer terms' matches cost about twice one over them: not worth it unless
    # the common terms match at least as many memories again.
    if sum(counts[t] for t in common) < SPLIT_GAIN * sum(counts[t] for t in finding):
        return terms, ()
    return finding, tuple(common)


def lexical_hits(conn, scope: Scope, terms: tuple[str, ...], now: int, limit: int = LEXICAL_K,
                 exclude: frozenset[str] = frozenset(), stats=None) -> list[tuple[dict, float]]:
    """Visible, auto-recallable memories matching any term (only the rarer ones, when the store's
    term statistics `stats` tell common ones: `lexical_terms`), best bm25 first."""
    finding, ranking = lexical_terms(terms, stats)
    if not finding:
        return []
    found = search.lexical_candidates(conn, scope, list(finding), now, limit + len(exclude),
                                      recall_modes=RECALL_MODES, rank_only=list(ranking))
    return [(r, s) for r, s in found if r["id"] not in exclude][:limit]


def readable_places(scope: Scope) -> list[tuple[str, str]]:
    """The (audience, boundary) pairs a scope may read: the vector index narrows searches to them."""
    return [(a, b) for a in scope.readable_audiences for b in scope.readable_boundaries]


def vector_hits(conn, scope: Scope, vectors, query_vec: np.ndarray, now: int, limit: int = VECTOR_K,
                exclude: frozenset[str] = frozenset()) -> list[tuple[dict, float]]:
    """The nearest visible, auto-recallable memories, best cosine first."""
    if vectors is None or query_vec is None:
        return []
    # The search already keeps only this scope's places and the unexpired, so the first `limit` +
    # a margin of its hits nearly always hold `limit` visible ones (what it cannot narrow: traces,
    # manual and never recall modes, secrets). When they do not, it asks again for four times as
    # many. Asking for 200 every time cost a quantized index 300 exact re-ranked vectors a search
    # (1.7 ms at 100,000 memories) and a float one nothing; reading all 200 rows cost 1.9 ms.
    want = limit + len(exclude) + HYDRATE_MARGIN
    while True:
        searched = vectors.search(query_vec, want, places=readable_places(scope), now=now)
        found = _hydrated(conn, scope, [(i, c) for i, c in searched if i not in exclude], now, limit)
        if len(found) >= limit or len(searched) < want or want >= len(vectors):  # or no more rows to ask for
            return found[:limit]
        want *= VECTOR_OVERFETCH


def _hydrated(conn, scope: Scope, hits: list[tuple[str, float]], now: int, limit: int) -> list[tuple[dict, float]]:
    """The visible rows of hits, best first, read a little more than is missing at a time until
    `limit` are found."""
    found: list[tuple[dict, float]] = []
    start = 0
    while start < len(hits) and len(found) < limit:
        chunk = hits[start:start + limit - len(found) + HYDRATE_MARGIN]
        start += len(chunk)
        rows = search.hydrate_visible(conn, scope, [i for i, _ in chunk], now, recall_modes=RECALL_MODES)
        found += [(rows[i], c) for i, c in chunk if i in rows]
    return found


def stored_vectors(conn, model_id: str, ids: list[str]) -> dict[str, np.ndarray]:
    """The normalized vectors of embedded memories, read from the embeddings table."""
    return {i: v / (float(np.linalg.norm(v)) or 1.0) for i, v in vec.read_vectors(conn, model_id, ids).items()}


def stored_cosines(conn, model_id: str, ids: list[str], query_vec: np.ndarray) -> dict[str, float]:
    """Exact cosines for embedded memories the vector channel did not return (from the table)."""
    return {i: float(v @ query_vec) for i, v in stored_vectors(conn, model_id, ids).items()
            if v.shape == query_vec.shape}


def merge(conn, lex: list[tuple[dict, float]], vec: list[tuple[dict, float]], *, vectors=None,
          model_id: str | None = None, query_vec: np.ndarray | None = None,
          part_vecs: np.ndarray | None = None, part_hits: list[tuple[dict, float]] = (),
          known_vectors: dict[str, np.ndarray] | None = None) -> Pool:
    """Merge both channels' hits; lexical hits the vector channel missed get their exact cosine.

    With a message of several parts, `part_vecs` holds one query vector per part and `part_hits`
    what their searches found: every candidate then gets its cosine to each part too (`cosines`,
    the whole message's first), from the index or the embeddings table. `known_vectors` are vectors
    of some candidates read already (the index's, while the query was embedded).
    """
    cos = {r["id"]: c for r, c in vec}
    vrank = {r["id"]: i + 1 for i, (r, _) in enumerate(vec)}
    lrank = {r["id"]: i + 1 for i, (r, _) in enumerate(lex)}
    lexical = {r["id"]: s for r, s in lex}
    rows = {r["id"]: r for r, _ in part_hits}
    rows.update({r["id"]: r for r, _ in vec})
    rows.update({r["id"]: r for r, _ in lex})
    gaps: list[str] = []
    per_part: dict[str, tuple] = {}
    if query_vec is not None:
        missing = [i for i in rows if i not in cos]
        known = known_vectors or {}
        wanted = list(rows) if part_vecs is not None else missing
        found_vecs = {i: known[i] for i in wanted if i in known}
        unread = [i for i in wanted if i not in known]
        if vectors is not None and unread:
            found_vecs.update(vectors.vectors_of(unread))
        for i, found in found_vecs.items():
            if i not in cos:
                cos[i] = float(found @ query_vec)
        missing = [i for i in missing if i not in cos]
        if missing and model_id:
            cos.update(stored_cosines(conn, model_id, missing, query_vec))
        gaps = [i for i in missing if i not in cos]
        if part_vecs is not None and len(part_vecs):
            absent = [i for i in rows if i not in found_vecs and i not in gaps]
            stored = stored_vectors(conn, model_id, absent) if (absent and model_id) else {}
            for i in rows:
                v = found_vecs.get(i, stored.get(i))
                per_part[i] = (cos.get(i), *(float(x) for x in part_vecs @ v)) if v is not None else ()
    candidates = [
        Candidate(id=i, row=row, cosine=cos.get(i), lexical=lexical.get(i, 0.0),
                  vector_rank=vrank.get(i), lexical_rank=lrank.get(i), cosines=per_part.get(i, ()))
        for i, row in rows.items()
    ]
    return Pool(candidates, len(lex), len(vec), tuple(gaps))
