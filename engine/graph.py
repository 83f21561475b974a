"""Reading the knowledge graph: anchors with their counts, an anchor's edges through time.

Anchors and edges carry the audience and boundary of the memory that made them, so they are
read through the same rule as memories (`scope_sql`): a team viewer never sees a personal
anchor, even one that only its name would give away. An edge is current while `valid_to` is
NULL; a newer value of an exclusive relation closes it ("previously X, until date"). `as_of`
shows the edges as they stood at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from .db import one, rows
from .errors import InvalidInput, NotFound
from .policy import Scope, visible_sql

MAX_LIMIT = 500


def scope_sql(alias: str, scope: Scope) -> tuple[str, list]:
    """True for anchors and edges this scope may see (their audience and boundary)."""
    if scope.inert:
        return "0", []
    auds = scope.readable_audiences
    sql = f"{alias}.audience IN ({','.join('?' * len(auds))})"
    params: list = [*auds]
    if not scope.any_boundary:
        bounds = scope.readable_boundaries
        sql += f" AND {alias}.boundary IN ({','.join('?' * len(bounds))})"
        params.extend(bounds)
    return sql, params


@dataclass(frozen=True)
class Anchor:
    id: str
    name: str
    type: str
    audience: str
    boundary: str
    memories: int = 0
    edges: int = 0
    updated_at: int = 0

    def as_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "type": self.type, "audience": self.audience,
                "boundary": self.boundary, "memories": self.memories, "edges": self.edges,
                "updated_at": self.updated_at}


@dataclass(frozen=True)
class Edge:
    id: str
    from_id: str
    from_name: str
    relation: str
    to_id: str
    to_name: str
    valid_from: int
    valid_to: int | None
    asserted_by: str | None
    confidence: float
    deleted_as_wrong: bool = False  # closed when the memory that said it was deleted as wrong (WRONG_SQL)

    @property
    def current(self) -> bool:
        return self.valid_to is None

    @property
    def corrected(self) -> bool:
        """Retired as never so (a correction closed it where it began, or the memory that said it
        was deleted as wrong), not ended by a later fact."""
        return self.valid_to is not None and (self.valid_to == self.valid_from or self.deleted_as_wrong)

    def holds_at(self, when: int) -> bool:
        return not self.deleted_as_wrong and self.valid_from <= when and (self.valid_to is None or self.valid_to > when)

    def as_dict(self) -> dict:
        return {"id": self.id, "from": {"id": self.from_id, "name": self.from_name},
                "relation": self.relation, "to": {"id": self.to_id, "name": self.to_name},
                "valid_from": self.valid_from, "valid_to": self.valid_to, "current": self.current,
                "corrected": self.corrected, "deleted_as_wrong": self.deleted_as_wrong,
                "asserted_by": self.asserted_by, "confidence": self.confidence}


def _limit(limit: int) -> int:
    if not isinstance(limit, int) or limit < 1:
        raise InvalidInput("limit must be a positive whole number")
    return min(limit, MAX_LIMIT)


def _counts(conn: apsw.Connection, scope: Scope, anchor_ids: list[str], now: int) -> dict[str, tuple[int, int]]:
    if not anchor_ids:
        return {}
    marks = ",".join("?" * len(anchor_ids))
    out = {a: [0, 0] for a in anchor_ids}
    for kind, table, alias in (("document", "memory_documents", "d"), ("record", "memory_records", "r")):
        where, params = visible_sql(alias, scope, now, kind=kind)
        for anchor_id, n in conn.execute(
                f"SELECT {alias}.anchor_id, COUNT(*) FROM {table} {alias} WHERE {alias}.anchor_id IN ({marks})"
                f" AND {where} GROUP BY {alias}.anchor_id", (*anchor_ids, *params)):
            out[anchor_id][0] += n
    where, params = scope_sql("e", scope)
    for column in ("from_anchor_id", "to_anchor_id"):
        for anchor_id, n in conn.execute(
                f"SELECT e.{column}, COUNT(*) FROM memory_edges e WHERE e.{column} IN ({marks}) AND {where}"
                f" GROUP BY e.{column}", (*anchor_ids, *params)):
            out[anchor_id][1] += n
    return {a: (m, e) for a, (m, e) in out.items()}


def _anchor(row: dict, counts: tuple[int, int]) -> Anchor:
    return Anchor(row["anchor_id"], row["canonical_name"], row["anchor_type"], row["audience"],
                  row["boundary"], counts[0], counts[1], row["updated_at"])


def _in_use_sql(scope: Scope, now: int) -> tuple[str, list]:
    """True for an anchor with a memory or an edge (current or retired) that `scope` may see."""
    parts, params = [], []
    for kind, table, alias in (("document", "memory_documents", "ud"), ("record", "memory_records", "ur")):
        where, p = visible_sql(alias, scope, now, kind=kind)
        parts.append(f"EXISTS (SELECT 1 FROM {table} {alias} WHERE {alias}.anchor_id = a.anchor_id AND {where})")
        params += p
    where, p = scope_sql("ue", scope)
    parts.append(f"EXISTS (SELECT 1 FROM memory_edges ue WHERE (ue.from_anchor_id = a.anchor_id"
                 f" OR ue.to_anchor_id = a.anchor_id) AND {where})")
    return "(" + " OR ".join(parts) + ")", params + p


def anchors(conn: apsw.Connection, scope: Scope, now: int, *, query: str | None = None,
            anchor_type: str | None = None, limit: int = 50, after: str | None = None,
            in_use: bool | None = None) -> list[Anchor]:
    """Active anchors this scope may see, by name; `after` (a normalized name) pages on (keyset).
    `in_use` True: only those with a memory or an edge it may see (False: only those without)."""
    where, params = scope_sql("a", scope)
    clauses = ["a.status = 'active'", where]
    if in_use is not None:
        used, more = _in_use_sql(scope, now)
        clauses.append(used if in_use else f"NOT {used}")
        params += more
    if query:
        clauses.append("(a.normalized_name LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM anchor_aliases l"
                       " WHERE l.anchor_id = a.anchor_id AND l.normalized_name LIKE ? ESCAPE '\\'))")
        pattern = "%" + _like(query.strip().lower()) + "%"
        params += [pattern, pattern]
    if anchor_type:
        clauses.append("a.anchor_type = ?")
        params.append(anchor_type)
    if after:
        clauses.append("a.normalized_name > ?")
        params.append(after)
    found = rows(conn, f"SELECT a.* FROM memory_anchors a WHERE {' AND '.join(clauses)}"
                       f" ORDER BY a.normalized_name LIMIT ?", (*params, _limit(limit)))
    counts = _counts(conn, scope, [r["anchor_id"] for r in found], now)
    return [_anchor(r, counts[r["anchor_id"]]) for r in found]


def anchor_types(conn: apsw.Connection, scope: Scope) -> list[str]:
    """The distinct types of the active anchors this scope may see, by name: what a type filter
    offers. Read from the store, not a fixed list: the rules, the LLM and imports make their own."""
    where, params = scope_sql("a", scope)
    return [t for (t,) in conn.execute(
        f"SELECT DISTINCT a.anchor_type FROM memory_anchors a WHERE a.status = 'active' AND {where}"
        " ORDER BY a.anchor_type", params)]


def anchor(conn: apsw.Connection, scope: Scope, anchor_id: str, now: int) -> Anchor:
    where, params = scope_sql("a", scope)
    row = one(conn, f"SELECT a.* FROM memory_anchors a WHERE a.anchor_id=? AND a.status='active' AND {where}",
              (anchor_id, *params))
    if row is None:
        raise NotFound(f"no anchor {anchor_id!r} that you can see")
    return _anchor(row, _counts(conn, scope, [anchor_id], now)[anchor_id])


# An edge the deletion of its memory as wrong closed: that deletion's tombstone still stands, made at
# the moment the edge closed (store.delete_memory closes them at that moment so a restore can reopen
# them). It never held: no "as of" view shows it, and it reads "never so", not "previously".
# An edge whose memory was deleted as wrong was never so, whether the deletion closed it or a newer
# value had (Lisbon, replaced by Porto, then "My sister Anna lives in Lisbon." deleted as wrong: it
# read "Previously lives in Lisbon … replaced by Porto", a claim the person had said was wrong).
WRONG_SQL = ("(e.valid_to IS NOT NULL AND EXISTS (SELECT 1 FROM tombstones t WHERE t.memory_id = e.asserted_by"
             " AND t.created_at >= e.valid_to AND t.lifted_at IS NULL))")


def edges(conn: apsw.Connection, scope: Scope, anchor_id: str, *, as_of: int | None = None) -> list[Edge]:
    """Every edge touching the anchor that this scope may see, current first, newest first.

    With `as_of`, only the edges that held at that moment (and both ends visible).
    """
    where, params = scope_sql("e", scope)
    fa, fparams = scope_sql("fa", scope)
    ta, tparams = scope_sql("ta", scope)
    sql = (
        f"SELECT e.*, fa.canonical_name AS from_name, ta.canonical_name AS to_name, {WRONG_SQL} AS wrong"
        " FROM memory_edges e"
        " JOIN memory_anchors fa ON fa.anchor_id = e.from_anchor_id"
        " JOIN memory_anchors ta ON ta.anchor_id = e.to_anchor_id"
        f" WHERE (e.from_anchor_id = ? OR e.to_anchor_id = ?) AND {where} AND {fa} AND {ta}"
        # not the edge a merge dropped (it stays between the two, one merged away), nor the loop an
        # earlier merge left in its place ("Previously lives in Anna" on Anna)
        " AND fa.status = 'active' AND ta.status = 'active' AND e.from_anchor_id <> e.to_anchor_id"
    )
    args: list = [anchor_id, anchor_id, *params, *fparams, *tparams]
    if as_of is not None:
        sql += f" AND e.valid_from <= ? AND (e.valid_to IS NULL OR e.valid_to > ?) AND NOT {WRONG_SQL}"
        args += [as_of, as_of]
    sql += " ORDER BY (e.valid_to IS NULL) DESC, e.valid_from DESC LIMIT ?"
    args.append(MAX_LIMIT)
    found = [Edge(r["edge_id"], r["from_anchor_id"], r["from_name"], r["relation"], r["to_anchor_id"],
                  r["to_name"], r["valid_from"], r["valid_to"], r["asserted_by"], r["confidence"], bool(r["wrong"]))
             for r in rows(conn, sql, args)]
    return _one_per_fact(found)


def _one_per_fact(found: list[Edge]) -> list[Edge]:
    """One open edge per fact: two memories that say the same tie each hold an edge of it (so either
    alone keeps it, a restored one and one said while it was deleted), shown once, since the first."""
    first: dict[tuple, Edge] = {}
    for e in found:
        if e.valid_to is None:
            key = (e.from_id, e.relation, e.to_id)
            if key not in first or e.valid_from < first[key].valid_from:
                first[key] = e
    return [e for e in found if e.valid_to is not None or first[(e.from_id, e.relation, e.to_id)] is e]


def neighbourhood(conn: apsw.Connection, scope: Scope, anchor_id: str, *, depth: int = 1,
                  limit: int = 40, as_of: int | None = None) -> tuple[list[str], list[Edge], bool]:
    """The anchors within `depth` edges (1 or 2) of one anchor, at most `limit`, and the edges
    between them; the flag says whether the cap cut anything off ("show more")."""
    depth = max(1, min(2, int(depth)))
    seen = [anchor_id]
    found: dict[str, Edge] = {}
    frontier = [anchor_id]
    truncated = False
    for _ in range(depth):
        nxt: list[str] = []
        for node in frontier:
            for edge in edges(conn, scope, node, as_of=as_of):
                other = edge.to_id if edge.from_id == node else edge.from_id
                if other not in seen:
                    if len(seen) >= limit:
                        truncated = True
                        continue
                    seen.append(other)
                    nxt.append(other)
                found.setdefault(edge.id, edge)
        frontier = nxt
    kept = set(seen)
    return seen, [e for e in found.values() if e.from_id in kept and e.to_id in kept], truncated


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


__all__ = ["Anchor", "Edge", "anchor", "anchor_types", "anchors", "edges", "neighbourhood", "scope_sql"]
