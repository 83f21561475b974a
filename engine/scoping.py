"""Who can read what: "view as" an audience and boundary (or a token), and the edges such a
viewer sees.

A view is a Scope built by the same rule every read uses: a session's (`policy.session_scope`,
cross-boundary reads from settings included) or a token's (`Scope.viewer`). The memories,
anchors and edges shown for it are then read by the ordinary listings, with the visibility
predicate inside their SQL, so what the page shows is what that audience would get.
"""

from __future__ import annotations

import apsw

from .db import rows
from .errors import InvalidInput
from .graph import Edge, scope_sql
from .policy import AUDIENCES, Scope, check_name, session_scope

MAX_EDGES = 200


def as_session(audience: str, boundary: str, policy: dict, allows_boundary=None) -> Scope:
    """What a session of this audience and boundary reads (its cross-boundary grants included,
    cut to what `allows_boundary` lets the person looking see)."""
    if audience not in AUDIENCES:
        raise InvalidInput(f"choose an audience: {', '.join(AUDIENCES)}")
    return session_scope(audience, check_name(boundary), None, policy, allows_boundary)


def visible_edges(conn: apsw.Connection, scope: Scope, *, limit: int = 50) -> list[Edge]:
    """Current edges this scope sees (both ends visible too), newest first."""
    where, params = scope_sql("e", scope)
    fa, fparams = scope_sql("fa", scope)
    ta, tparams = scope_sql("ta", scope)
    found = rows(
        conn,
        "SELECT e.*, fa.canonical_name AS from_name, ta.canonical_name AS to_name FROM memory_edges e"
        " JOIN memory_anchors fa ON fa.anchor_id = e.from_anchor_id"
        " JOIN memory_anchors ta ON ta.anchor_id = e.to_anchor_id"
        f" WHERE e.valid_to IS NULL AND {where} AND {fa} AND {ta} ORDER BY e.valid_from DESC LIMIT ?",
        (*params, *fparams, *tparams, max(1, min(int(limit), MAX_EDGES))))
    return [Edge(r["edge_id"], r["from_anchor_id"], r["from_name"], r["relation"], r["to_anchor_id"], r["to_name"],
                 r["valid_from"], r["valid_to"], r["asserted_by"], r["confidence"]) for r in found]


def boundaries_in_use(conn: apsw.Connection, *, limit: int = 200) -> list[str]:
    """Boundaries sessions and memories use, for a picker (most used first)."""
    return [r[0] for r in conn.execute(
        "SELECT boundary FROM (SELECT boundary FROM sessions UNION ALL SELECT boundary FROM memory_anchors)"
        " GROUP BY boundary ORDER BY COUNT(*) DESC, boundary LIMIT ?", (limit,))]


__all__ = ["as_session", "boundaries_in_use", "visible_edges"]
