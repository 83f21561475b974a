"""Explicit reads: `find` (FTS5 over visible memories) and `get` (ids copied verbatim).

The visibility predicate from `policy.visible_sql` is inside every candidate query, so a LIMIT
can never let a hidden memory displace a visible one or leak through.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass

import apsw

from .db import rows
from .errors import InvalidInput, NotFound
from .memory import MemoryItem, doc_columns, item_from_row, parse_id, rec_columns, text_terms
from .policy import Scope, visible_sql
from .store import load_visible

# bm25 column weights: title, body, aliases, facets.
BM25_WEIGHTS = "10.0, 1.0, 5.0, 3.0"
MAX_FIND_LIMIT = 100
MAX_TERMS = 12
TOKEN_RE = re.compile(r"[^\W_][\w'-]*", re.UNICODE)
# Words that carry no topic in a search box; dropped unless nothing else is left.
FIND_STOPWORDS = frozenset(
    "a an and are as at be but by do does for from had has have how i in is it its me my of on or "
    "our so that the their them they this to was we were what when where which who why will with "
    "you your".split()
)


def query_terms(text: str, stopwords: frozenset[str] = FIND_STOPWORDS, limit: int = MAX_TERMS) -> list[str]:
    """Distinct lowercase terms of a query, stopwords dropped (unless that leaves nothing)."""
    tokens = [t.strip("'-").lower() for t in TOKEN_RE.findall(text or "")]
    tokens = [t for t in tokens if t]
    kept = [t for t in tokens if t not in stopwords and len(t) > 1] or tokens
    out: list[str] = []
    for t in kept:
        if t not in out:
            out.append(t)
    return out[:limit]


def fts_match(terms: list[str]) -> str:
    """An FTS5 MATCH expression: every term quoted (so no term is parsed as syntax), OR-joined."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _candidate_predicate(scope: Scope, now: int, kind: str, include_expired: bool, include_trace: bool,
                         recall_modes: tuple[str, ...] | None) -> tuple[str, list]:
    """The visibility predicate, optionally narrowed to some recall modes (automatic recall)."""
    pred, params = visible_sql("m", scope, now, kind=kind, include_expired=include_expired,
                               include_trace=include_trace)
    if recall_modes is not None:
        pred += f" AND m.recall_mode IN ({','.join('?' * len(recall_modes))})"
        params = [*params, *recall_modes]
    return pred, params


def lexical_candidates(conn: apsw.Connection, scope: Scope, terms: list[str], now: int, limit: int, *,
                       include_expired: bool = False, include_trace: bool = False,
                       recall_modes: tuple[str, ...] | None = None,
                       rank_only: list[str] = ()) -> list[tuple[dict, float]]:
    """Visible memories matching any term, best bm25 first, as (row, bm25 score >= 0) pairs.

    The answer is the one a single query would give that joins every match, checks it against the
    visibility predicate and then takes the best `limit` (ties broken by the newest). It is found
    without joining every match: per table, FTS5 hands over the best-ranked prefix of its matches
    (`LIMIT`, which it serves far faster than a join over 15,000 matches of a common word), only
    those rows are read and checked, and the prefix grows fourfold until it holds `limit` visible
    rows whose last is strictly better than the prefix's worst (so nothing further down, visible
    or not, could still tie or beat it), or until FTS5 has no more matches.

    `rank_only` terms (automatic recall's common words) add to the score of a memory that matches
    one of `terms`, exactly as in one query over all of them, but find no memory by themselves:
    the matches are asked for in two disjoint parts, `(terms) AND (rank_only)` and `(terms) NOT
    (rank_only)`, whose bm25 sums over every term of both (FTS5 scores every phrase of the
    expression), and FTS5 never scores the thousands of memories holding only a common word.
    """
    if not terms or scope.inert:
        return []
    match = fts_match(terms)
    matches = [match]
    if rank_only:
        common = fts_match(list(rank_only))
        matches = [f"({match}) AND ({common})", f"({match}) NOT ({common})"]
    found: list[dict] = []
    for table, kind, cols in (("memory_documents", "document", doc_columns()),
                              ("memory_records", "record", rec_columns())):
        pred, pp = _candidate_predicate(scope, now, kind, include_expired, include_trace, recall_modes)
        for expression in matches:  # disjoint: the best of their union is among the best of each
            found += _best_visible(conn, table, cols, pred, pp, expression, limit)
    found.sort(key=lambda r: (-r["lexical"], -r["updated_at"]))
    return [(r, r.pop("lexical")) for r in found[:limit]]


PREFIX_MIN = 64


RANKED_PER_LIMIT = 8  # the first FTS5 query hands over the best 8 x limit ids (their scores are computed anyway)


def _best_visible(conn: apsw.Connection, table: str, cols: str, pred: str, params: list, match: str,
                  limit: int) -> list[dict]:
    """The visible rows of one table among the best-ranked FTS5 matches: every visible row at
    least as good as the `limit`-th best visible one (all of them when there are fewer).

    FTS5 scores every match whatever the LIMIT, so the first query asks for 8 x `limit` ids at once
    and the rows are read a prefix at a time down that list; only a prefix that must grow past it
    (long runs of tied scores, many hidden rows) asks again, once, for every match, best first.
    """
    ranked_sql = (f"SELECT rowid, -bm25({table}_fts, {BM25_WEIGHTS}) FROM {table}_fts"
                  f" WHERE {table}_fts MATCH ? ORDER BY 2 DESC")
    read_sql = (f"SELECT {cols}, m.rowid AS fts_rowid FROM {table} m"
                f" WHERE m.rowid IN (SELECT value FROM json_each(?)) AND {pred}")
    size = max(PREFIX_MIN, 2 * limit)
    asked = max(size, RANKED_PER_LIMIT * limit)
    ranked = list(conn.execute(ranked_sql + " LIMIT ?", (match, asked)))
    complete = len(ranked) < asked     # `ranked` holds every match
    more = None                        # the cursor over every match, once the first list is not enough
    visible: list[dict] = []
    read: set[int] = set()             # rows read in earlier rounds: a grown prefix reads only its new ones
    while True:
        if len(ranked) < size and not complete:
            if more is None:  # every match, best first (tied rows may come in another order than the LIMIT's)
                more, ranked = conn.execute(ranked_sql, (match,)), []
            ranked += itertools.islice(more, size - len(ranked))
            complete = len(ranked) < size
        prefix = ranked[:size]
        score = {rowid: sc for rowid, sc in prefix if rowid not in read}
        read.update(score)
        if score:
            found = rows(conn, read_sql, (json.dumps(list(score)), *params))
            for r in found:
                r["lexical"] = score[r.pop("fts_rowid")]
            visible += found
            visible.sort(key=lambda r: -r["lexical"])
        exhausted = complete and len(prefix) == len(ranked)
        if not visible and exhausted:
            return []
        if exhausted or (len(visible) >= limit and visible[limit - 1]["lexical"] > prefix[-1][1]):
            cutoff = visible[min(limit, len(visible)) - 1]["lexical"]
            return [r for r in visible if r["lexical"] >= cutoff]
        size *= 4


def find(conn: apsw.Connection, scope: Scope, query: str, now: int, *, limit: int = 5,
         include_expired: bool = False, include_trace: bool = False) -> list[MemoryItem]:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query is empty: give some words to search for")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_FIND_LIMIT:
        raise InvalidInput(f"limit must be a whole number from 1 to {MAX_FIND_LIMIT}")
    terms = query_terms(query)
    if not terms:
        return []
    found = lexical_candidates(conn, scope, terms, now, limit, include_expired=include_expired,
                               include_trace=include_trace)
    return [item_from_row(r, now, score=score) for r, score in found]


@dataclass(frozen=True)
class GetResult:
    items: list[MemoryItem]
    missing: list[tuple[str, str]]  # (id as given, why)


def get(conn: apsw.Connection, scope: Scope, ids: list[str], now: int) -> GetResult:
    if isinstance(ids, str):
        ids = [p for p in re.split(r"[,\s]+", ids) if p]
    if not isinstance(ids, (list, tuple)) or not ids:
        raise InvalidInput("ids is empty: pass one or more memory ids (doc-… or rec-…)")
    if len(ids) > MAX_FIND_LIMIT:
        raise InvalidInput(f"at most {MAX_FIND_LIMIT} ids per call")
    items: list[MemoryItem] = []
    missing: list[tuple[str, str]] = []
    seen = set()
    for raw in ids:
        try:
            memory_id = parse_id(raw)
            item = get_one(conn, scope, memory_id, now)
        except (InvalidInput, NotFound) as exc:
            missing.append((str(raw), exc.message))
            continue
        if item.id not in seen:
            seen.add(item.id)
            items.append(item)
    items.sort(key=lambda i: i.updated_at, reverse=True)
    return GetResult(items, missing)


def get_one(conn: apsw.Connection, scope: Scope, memory_id: str, now: int) -> MemoryItem:
    """One visible memory by id; a record id resolves to the newest record of its chain."""
    return item_from_row(load_visible(conn, scope, memory_id, now), now)


def list_visible(conn: apsw.Connection, scope: Scope, now: int, *, limit: int = 50, offset: int = 0,
                 include_expired: bool = True, include_trace: bool = True) -> list[MemoryItem]:
    """Newest visible memories first (the UI listing); the predicate is inside the query."""
    parts, params = [], []
    for table, kind, cols in (("memory_documents", "document", doc_columns()),
                              ("memory_records", "record", rec_columns())):
        pred, pp = visible_sql("m", scope, now, kind=kind, include_expired=include_expired,
                               include_trace=include_trace)
        parts.append(f"SELECT {cols} FROM {table} m WHERE {pred}")
        params += pp
    sql = " UNION ALL ".join(parts) + " ORDER BY updated_at DESC, id LIMIT ? OFFSET ?"
    return [item_from_row(r, now) for r in rows(conn, sql, (*params, limit, offset))]


def facet_members(conn: apsw.Connection, scope: Scope, facet: str, now: int, limit: int, *,
                  memory_class: str = "durable_fact", recall_modes: tuple[str, ...] | None = None,
                  exclude: frozenset[str] = frozenset()) -> list[dict]:
    """Visible documents of one class carrying exactly this facet, most recently updated first.

    FTS5 finds the facet's words in the facets column (the tokenizer splits `travel_profile`); the
    exact facet is then checked on the stored lines, so `travel` alone never matches it.
    """
    words = [t for t in TOKEN_RE.findall(facet) if t]
    if not words or scope.inert:
        return []
    pred, params = _candidate_predicate(scope, now, "document", False, False, recall_modes)
    sql = (f"SELECT {doc_columns()} FROM memory_documents_fts JOIN memory_documents m"
           f" ON m.rowid = memory_documents_fts.rowid"
           f" WHERE memory_documents_fts MATCH ? AND m.memory_class = ? AND {pred}"
           f" ORDER BY m.updated_at DESC")
    match = 'facets : "' + " ".join(words).replace('"', '""') + '"'
    wanted = facet.strip().lower()
    out: list[dict] = []
    for r in rows(conn, sql, (match, memory_class, *params)):
        if r["id"] in exclude or wanted not in (f.strip().lower() for f in text_terms(r["facets"])):
            continue
        out.append(r)
        if len(out) >= limit:
            break
    return out


def bearing_members(conn: apsw.Connection, scope: Scope, bearing: str, now: int, limit: int, *,
                    recall_modes: tuple[str, ...] | None = None, exclude: frozenset[str] = frozenset()) -> list[dict]:
    """Visible documents (durable facts: evidence is kept as records) that bear on `bearing`
    (bearing.py), most recently updated first: read by the partial index that holds only documents
    bearing on something."""
    if scope.inert:
        return []
    pred, params = _candidate_predicate(scope, now, "document", False, False, recall_modes)
    sql = (f"SELECT {doc_columns()} FROM memory_documents m WHERE m.bears_on = ? AND {pred}"
           f" ORDER BY m.updated_at DESC LIMIT ?")
    return [r for r in rows(conn, sql, (bearing, *params, limit + len(exclude))) if r["id"] not in exclude][:limit]


def hydrate_visible(conn: apsw.Connection, scope: Scope, ids: list[str], now: int, *,
                    include_expired: bool = False, include_trace: bool = False,
                    recall_modes: tuple[str, ...] | None = None) -> dict[str, dict]:
    """Rows for the ids (e.g. vector hits) that this scope may see, through the same predicate."""
    if not ids or scope.inert:
        return {}
    out: dict[str, dict] = {}
    docs = [i for i in ids if i.startswith("doc-")]
    recs = [i for i in ids if i.startswith("rec-")]
    for table, kind, key, cols, chunk_ids in (
        ("memory_documents", "document", "document_id", doc_columns(), docs),
        ("memory_records", "record", "record_id", rec_columns(), recs),
    ):
        for start in range(0, len(chunk_ids), 500):
            chunk = chunk_ids[start:start + 500]
            pred, pp = _candidate_predicate(scope, now, kind, include_expired, include_trace, recall_modes)
            sql = f"SELECT {cols} FROM {table} m WHERE m.{key} IN ({','.join('?' * len(chunk))}) AND {pred}"
            for r in rows(conn, sql, (*chunk, *pp)):
                out[r["id"]] = r
    return out
