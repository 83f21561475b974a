"""Browsing memories as a person does: filtered, sorted listings paged by keyset, and search.

A listing never pages by OFFSET: each page starts after the sort key and id of the last row seen
(an opaque cursor), so page 500 costs what page 1 costs. Documents and records are read by two
queries that each walk their own index in order and stop after a page, merged here. Visibility
(`visible_sql`) and the person's filters are inside both queries, never applied after a LIMIT.

Sorts: `newest` (last change first); `last_recalled` and `most_recalled` walk the recall
statistics first and then go on with the memories never recalled, newest first.

Search is the read path's own machinery: FTS5 over the visible, filtered memories and, when an
embedder is loaded, the nearest vectors (vector-only hits must clear the model's cosine floor),
merged and ranked by `recall.rank` (`fused`: cosine, lexical, class prior, recency). As in a
search box, memories holding every word are gathered first; only when fewer than a page do are
memories holding any of the words added (so common words do not make every search score most
of the store).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import apsw
import numpy as np

from .db import rows
from .errors import InvalidInput
from .memory import MemoryItem, doc_columns, expires_for, item_from_row, kind_for_class, rec_columns
from .policy import AUDIENCES, MEMORY_CLASSES, Scope, check_name, visible_sql
from .recall.candidates import merge
from .recall.rank import rank
from .search import BM25_WEIGHTS, fts_match, query_terms

SORTS = ("newest", "last_recalled", "most_recalled")
STATES = ("live", "expired")
# What a person calls where a memory came from, and the sources each covers.
SOURCE_GROUPS = {
    "observed": ("observer",),
    "agent": ("tool", "api", "subagent", "compaction", "eval"),
    "imported": ("import",),
    "ui": ("ui",),
}
MAX_PAGE = 200
SEARCH_LIMIT = 50
VECTOR_K = 200
_CURSOR_RE = re.compile(r"^([nrc])\.(-?\d{1,20})\.((?:doc|rec)-[0-9a-f]{32})$")


@dataclass(frozen=True)
class MemoryFilter:
    """What a listing or a search is narrowed to (None: any)."""

    memory_class: str | None = None
    audience: str | None = None
    boundary: str | None = None
    anchor_id: str | None = None
    source: str | None = None  # a key of SOURCE_GROUPS
    state: str = "live"  # live (unexpired) or expired
    until: int | None = None  # only memories that existed then (created at or before)

    def checked(self) -> "MemoryFilter":
        if self.memory_class is not None and self.memory_class not in MEMORY_CLASSES:
            raise InvalidInput(f"unknown class {self.memory_class!r}: use one of {', '.join(MEMORY_CLASSES)}")
        if self.audience is not None and self.audience not in AUDIENCES:
            raise InvalidInput(f"unknown audience {self.audience!r}: use one of {', '.join(AUDIENCES)}")
        if self.source is not None and self.source not in SOURCE_GROUPS:
            raise InvalidInput(f"unknown source {self.source!r}: use one of {', '.join(SOURCE_GROUPS)}")
        if self.state not in STATES:
            raise InvalidInput(f"unknown state {self.state!r}: use one of {', '.join(STATES)}")
        if self.boundary is not None:  # spelled as stored (NFC): "Café" from a folder name finds "Café"
            return replace(self, boundary=check_name(self.boundary))
        return self


@dataclass(frozen=True)
class Page:
    items: list[MemoryItem]
    next_cursor: str | None  # None: this was the last page


def filter_sql(alias: str, flt: MemoryFilter, now: int) -> tuple[str, list]:
    """The person's filters as SQL (ANDed after the visibility predicate)."""
    parts, params = [], []
    for column, value in (("memory_class", flt.memory_class), ("audience", flt.audience),
                          ("boundary", flt.boundary), ("anchor_id", flt.anchor_id)):
        if value is not None:
            parts.append(f"{alias}.{column} = ?")
            params.append(value)
    if flt.source is not None:
        group = SOURCE_GROUPS[flt.source]
        parts.append(f"{alias}.source IN ({','.join('?' * len(group))})")
        params.extend(group)
    if flt.until is not None:
        parts.append(f"{alias}.created_at <= ?")
        params.append(int(flt.until))
    if flt.state == "expired":
        parts.append(f"{alias}.expires_at IS NOT NULL AND {alias}.expires_at <= ?")
    else:
        parts.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)")
    params.append(now)
    return " AND ".join(parts), params


def _where(scope: Scope, flt: MemoryFilter, now: int, kind: str) -> tuple[str, list]:
    pred, params = visible_sql("m", scope, now, kind=kind, include_expired=True, include_trace=True)
    more, more_params = filter_sql("m", flt, now)
    return f"{pred} AND {more}", [*params, *more_params]


# -- cursors ------------------------------------------------------------------------------------


def encode_cursor(phase: str, key: int, item_id: str) -> str:
    return f"{phase}.{int(key)}.{item_id}"


def decode_cursor(cursor: str | None) -> tuple[str, int, str] | None:
    if cursor is None or cursor == "":
        return None
    found = _CURSOR_RE.match(cursor) if isinstance(cursor, str) else None
    if not found:
        raise InvalidInput("that page link is broken: go back to the first page")
    return found.group(1), int(found.group(2)), found.group(3)


# -- listing --------------------------------------------------------------------------------------


_TABLES = (("memory_documents", "document", "document_id", doc_columns, "updated_at"),
           ("memory_records", "record", "record_id", rec_columns, "created_at"))


def _tables(flt: MemoryFilter) -> tuple:
    """The tables that can hold what the filter asks for: the class fixes the table (durable facts
    are documents, the rest records) and only evidence and traces expire. Skipping the other
    table spares a walk over all of its rows that could find nothing."""
    classes = [flt.memory_class] if flt.memory_class else list(MEMORY_CLASSES)
    if flt.state == "expired":
        classes = [c for c in classes if expires_for(c, 0) is not None]
    kinds = {kind_for_class(c) for c in classes}
    return tuple(t for t in _TABLES if t[1] in kinds)


def _newest(conn, scope, flt, now, after, limit, *, never_recalled: bool = False) -> list[tuple[int, dict]]:
    found: list[tuple[int, dict]] = []
    for table, kind, key, columns, time_col in _tables(flt):
        where, params = _where(scope, flt, now, kind)
        if after is not None:
            where += f" AND (m.{time_col}, m.{key}) < (?, ?)"
            params += [after[0], after[1]]
        if never_recalled:
            where += f" AND NOT EXISTS (SELECT 1 FROM memory_recall_stats s WHERE s.item_id = m.{key})"
        for r in rows(conn, f"SELECT {columns()}, m.{time_col} AS sort_key FROM {table} m WHERE {where}"
                            f" ORDER BY m.{time_col} DESC, m.{key} DESC LIMIT ?", (*params, limit)):
            found.append((r.pop("sort_key"), r))
    found.sort(key=lambda kr: (kr[0], kr[1]["id"]), reverse=True)
    return found


def _recalled(conn, scope, flt, now, after, limit, column: str) -> list[tuple[int, dict]]:
    found: list[tuple[int, dict]] = []
    for table, kind, key, columns, _ in _tables(flt):
        where, params = _where(scope, flt, now, kind)
        if after is not None:
            where += f" AND (s.{column}, s.item_id) < (?, ?)"
            params += [after[0], after[1]]
        for r in rows(conn, f"SELECT {columns()}, s.{column} AS sort_key FROM memory_recall_stats s"
                            f" JOIN {table} m ON m.{key} = s.item_id WHERE {where}"
                            f" ORDER BY s.{column} DESC, s.item_id DESC LIMIT ?", (*params, limit)):
            found.append((r.pop("sort_key"), r))
    found.sort(key=lambda kr: (kr[0], kr[1]["id"]), reverse=True)
    return found


def list_page(conn: apsw.Connection, scope: Scope, now: int, *, flt: MemoryFilter = MemoryFilter(),
              sort: str = "newest", cursor: str | None = None, limit: int = 50) -> Page:
    """One page of the memories `scope` may see, filtered and sorted, after `cursor`."""
    if sort not in SORTS:
        raise InvalidInput(f"unknown sort {sort!r}: use one of {', '.join(SORTS)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInput("limit must be a positive whole number")
    limit = min(limit, MAX_PAGE)
    flt = flt.checked()
    if scope.inert:
        return Page([], None)
    after = decode_cursor(cursor)
    phase = after[0] if after else ("n" if sort == "newest" else ("r" if sort == "last_recalled" else "c"))
    got: list[tuple[str, int, dict]] = []
    if phase in ("r", "c"):
        column = "last_recalled_at" if phase == "r" else "recalled_count"
        got = [(phase, k, r) for k, r in _recalled(conn, scope, flt, now, after and after[1:], limit + 1, column)]
        if len(got) <= limit:  # the recalled ones ran out: go on with the rest, newest first
            rest = _newest(conn, scope, flt, now, None, limit + 1 - len(got), never_recalled=True)
            got += [("n", k, r) for k, r in rest]
    else:
        got = [("n", k, r) for k, r in _newest(conn, scope, flt, now, after and after[1:], limit + 1,
                                               never_recalled=sort != "newest")]
    more = len(got) > limit
    got = got[:limit]
    items = annotate(conn, [item_from_row(r, now) for _, _, r in got])
    last = got[-1] if got else None
    return Page(items, encode_cursor(last[0], last[1], last[2]["id"]) if more and last else None)


def annotate(conn: apsw.Connection, items: list[MemoryItem]) -> list[MemoryItem]:
    """Each item with its anchor's name and its recall count and last recall (`item.extra`)."""
    if not items:
        return items
    ids = [i.id for i in items]
    marks = ",".join("?" * len(ids))
    stats = {r["item_id"]: r for r in rows(
        conn, f"SELECT item_id, recalled_count, last_recalled_at FROM memory_recall_stats WHERE item_id IN ({marks})",
        ids)}
    anchor_ids = sorted({i.anchor_id for i in items if i.anchor_id})
    names = {}
    if anchor_ids:
        names = {r["anchor_id"]: r["canonical_name"] for r in rows(
            conn, f"SELECT anchor_id, canonical_name FROM memory_anchors WHERE anchor_id IN"
                  f" ({','.join('?' * len(anchor_ids))})", anchor_ids)}
    out = []
    for item in items:
        s = stats.get(item.id) or {}
        out.append(replace(item, extra={**item.extra, "anchor_name": names.get(item.anchor_id),
                                        "recalled_count": s.get("recalled_count", 0),
                                        "last_recalled_at": s.get("last_recalled_at")}))
    return out


# -- search ---------------------------------------------------------------------------------------


def search(conn: apsw.Connection, scope: Scope, now: int, query: str, *, flt: MemoryFilter = MemoryFilter(),
           embedder=None, vectors=None, limit: int = SEARCH_LIMIT) -> list[MemoryItem]:
    """The visible, filtered memories that match `query` in words or (with an embedder) in meaning."""
    flt = flt.checked()
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the search is empty: type some words")
    if scope.inert:
        return []
    limit = max(1, min(int(limit), MAX_PAGE))
    terms = query_terms(query)
    lex = _lexical(conn, scope, flt, now, " AND ".join(fts_match([t]) for t in terms), limit) if terms else []
    if terms and len(terms) > 1 and len(lex) < limit:
        seen = {r["id"] for r, _ in lex}
        lex += [(r, s) for r, s in _lexical(conn, scope, flt, now, fts_match(terms), limit) if r["id"] not in seen]
    vec, query_vec = [], None
    if embedder is not None and vectors is not None:
        query_vec = np.asarray(embedder.embed_queries([query])[0], dtype=np.float32)
        vec = _vector_hits(conn, scope, flt, now, vectors, query_vec, embedder.floor)
    pool = merge(conn, lex, vec, vectors=vectors, model_id=getattr(embedder, "model_id", None), query_vec=query_vec)
    ranked = rank(pool.candidates, now, method="fused")
    items = [item_from_row(r.candidate.row, now, score=round(r.score, 4)) for r in ranked[:limit]]
    return annotate(conn, items)


def _lexical(conn, scope, flt, now, match: str, limit: int) -> list[tuple[dict, float]]:
    """Visible, filtered memories matching an FTS5 expression, best bm25 first."""
    found: list[tuple[dict, float]] = []
    for table, kind, _, columns, _ in _tables(flt):
        where, params = _where(scope, flt, now, kind)
        for r in rows(conn, f"SELECT {columns()}, -bm25({table}_fts, {BM25_WEIGHTS}) AS lexical"
                            f" FROM {table}_fts JOIN {table} m ON m.rowid = {table}_fts.rowid"
                            f" WHERE {table}_fts MATCH ? AND {where} ORDER BY lexical DESC LIMIT ?",
                      (match, *params, limit)):
            found.append((r, r.pop("lexical")))
    found.sort(key=lambda rs: -rs[1])
    return found[:limit]


def _vector_hits(conn, scope, flt, now, vectors, query_vec, floor) -> list[tuple[dict, float]]:
    places = None if scope.any_boundary else [(a, b) for a in scope.readable_audiences
                                               for b in scope.readable_boundaries]
    hits = vectors.search(query_vec, VECTOR_K, places=places, now=now if flt.state == "live" else None)
    if floor is not None:
        hits = [(i, c) for i, c in hits if c >= floor]
    found: dict[str, dict] = {}
    for table, kind, key, columns, _ in _tables(flt):
        wanted = [i for i, _ in hits if i.startswith(kind[:3] + "-")]
        if not wanted:
            continue
        where, params = _where(scope, flt, now, kind)
        for r in rows(conn, f"SELECT {columns()} FROM {table} m WHERE m.{key} IN ({','.join('?' * len(wanted))})"
                            f" AND {where}", (*wanted, *params)):
            found[r["id"]] = r
    return [(found[i], c) for i, c in hits if i in found]


__all__ = ["MemoryFilter", "Page", "SORTS", "SOURCE_GROUPS", "decode_cursor", "list_page", "search"]
