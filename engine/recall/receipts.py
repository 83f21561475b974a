"""Recall receipts (`recall_events`): what one recall considered, scored, injected and dropped, and why.

One row per recall, written off the turn's critical path; `Engine.explain(receipt_id)` returns it.
Receipts older than `memory.recall.receipt_retention_days` are pruned.
"""

from __future__ import annotations

import json
import re

from ..clock import DAY_MS, iso
from ..db import one, scalar
from ..errors import InvalidInput, NotFound
from ..memory import new_id
from .pipeline import RecallTrace

RECEIPT_PREFIX = "rcp"
_RECEIPT_ID = re.compile(rf"{RECEIPT_PREFIX}-[0-9a-f]{{32}}")
MAX_CONSIDERED = 25  # the best-ranked candidates kept with their scores; counts cover the rest


def new_receipt_id() -> str:
    return new_id(RECEIPT_PREFIX)


def receipt_body(trace: RecallTrace, *, receipt_id: str, session_id: str | None, epoch: int,
                 created_at: int) -> dict:
    """The JSON document stored for one recall."""
    gate_by_id = {d.id: d for d in trace.gate}
    joined = {c.id for c in trace.companions}
    dropped = [{"id": r.id, "stage": "floor", "why": f"cosine {r.candidate.cosine:.3f} under the floor "
                f"{trace.floor:.3f} ({trace.floor_source})"} for r in trace.floor_dropped if r.id not in joined]
    dropped += [{"id": d.id, "stage": "gate", "why": d.reason} for d in trace.gate
                if not d.kept and d.id not in joined]
    dropped += [{"id": i.id, "stage": "budget", "why": why} for i, why in trace.budget_dropped]
    pool = trace.pool
    return {
        "receipt": receipt_id,
        "session_id": session_id,
        "compaction_epoch": epoch,
        "created_at": iso(created_at),
        "query": trace.plan.query,
        "mode": trace.mode,
        "ranking": trace.ranking,
        "model_id": trace.model_id,
        "plan": {"terms": list(trace.plan.terms), "anchors": list(trace.plan.anchors),
                 "content": list(trace.plan.content)},
        "counts": {
            "lexical": pool.lexical_count if pool else 0,
            "vector": pool.vector_count if pool else 0,
            "considered": len(trace.ranked),
            "excluded": len(trace.excluded),
            "floor_dropped": sum(1 for r in trace.floor_dropped if r.id not in joined),
            "gate_dropped": sum(1 for d in trace.gate if not d.kept and d.id not in joined),
            "companions": len(trace.companions),
            "budget_dropped": len(trace.budget_dropped),
            "injected": len(trace.injected),
        },
        "considered": [
            {"rank": n + 1, "id": r.id, "title": r.candidate.row.get("title", ""),
             "cosine": None if r.candidate.cosine is None else round(r.candidate.cosine, 4),
             "lexical": round(r.candidate.lexical, 4), "vector_rank": r.candidate.vector_rank,
             "lexical_rank": r.candidate.lexical_rank, "score": round(r.score, 4),
             "reasons": list(r.reasons),
             "gate": None if r.id not in gate_by_id else round(gate_by_id[r.id].score, 4)}
            for n, r in enumerate(trace.ranked[:MAX_CONSIDERED])
        ],
        "floor": {"value": trace.floor, "source": trace.floor_source},
        "gate": {"kind": trace.gate_kind,
                 "decisions": [{"id": d.id, "score": round(d.score, 4), "kept": d.kept, "reason": d.reason,
                                "features": {k: round(v, 4) for k, v in d.features.items()}}
                               for d in trace.gate]},
        "companions": [{"id": c.id, "facet": c.facet, "with": c.joined, "why": c.reason}
                       for c in trace.companions],
        "injected": [dict(i.as_dict(), chars=len(i.content)) for i in trace.injected],
        "dropped": dropped,
        "excluded": list(trace.excluded),
        "timings_ms": dict(trace.timings),
        "degraded": list(trace.degraded),
    }


def insert_receipt(conn, body: dict, created_at: int, retention_days: int | None = None) -> str:
    """Store one receipt (and prune old ones when asked); a write function: conn first, no commit."""
    conn.execute(
        "INSERT INTO recall_events(receipt_id, session_id, query, receipt_json, injected_count, degraded,"
        " total_ms, created_at, compaction_epoch) VALUES (?,?,?,?,?,?,?,?,?)",
        (body["receipt"], body.get("session_id"), body["query"], json.dumps(body), len(body["injected"]),
         1 if body["degraded"] else 0, body["timings_ms"].get("total_ms"), created_at, body.get("compaction_epoch")),
    )
    record_injections(conn, body["receipt"], [i["id"] for i in body["injected"]], created_at)
    if retention_days is not None:
        prune(conn, created_at, retention_days)
    return body["receipt"]


def record_injections(conn, receipt_id: str, ids: list[str], created_at: int) -> None:
    """A memory's recall history: one row per injection, and its all-time count and last time."""
    for item_id in dict.fromkeys(ids):
        conn.execute("INSERT OR IGNORE INTO recall_injections(receipt_id, item_id, created_at) VALUES (?,?,?)",
                     (receipt_id, item_id, created_at))
        conn.execute(
            "INSERT INTO memory_recall_stats(item_id, recalled_count, last_recalled_at) VALUES (?, 1, ?)"
            " ON CONFLICT(item_id) DO UPDATE SET recalled_count = recalled_count + 1,"
            " last_recalled_at = MAX(last_recalled_at, excluded.last_recalled_at)", (item_id, created_at))


def prune(conn, now: int, retention_days: int) -> int:
    """Delete receipts older than the retention (and their history rows; the counts stay)."""
    cutoff = now - retention_days * DAY_MS
    conn.execute("DELETE FROM recall_events WHERE created_at < ?", (cutoff,))
    pruned = conn.changes()
    conn.execute("DELETE FROM recall_injections WHERE created_at < ?", (cutoff,))
    return pruned


def load(conn, receipt_id: str) -> dict:
    if not isinstance(receipt_id, str) or not _RECEIPT_ID.fullmatch(receipt_id):
        # "rcp-x" is a typo, not a pruned receipt: only a well-formed id may be one that was pruned
        raise InvalidInput(f"{receipt_id!r} is not a recall receipt id: they look like rcp-<32 hex digits>")
    row = one(conn, "SELECT receipt_json FROM recall_events WHERE receipt_id=?", (receipt_id,))
    if row is None:
        raise NotFound(f"no recall receipt {receipt_id}: it may have been pruned "
                       "(memory.recall.receipt_retention_days)")
    return json.loads(row["receipt_json"])


def injected_this_epoch(conn, session_id: str, epoch: int) -> frozenset[str]:
    """Ids already injected in this session since its last compaction (progressive exclusion): read
    from the injection rows, so a session's hundredth turn does not parse its 99 receipts. A
    document corrected since it was last injected is not among them: the agent holds its old text,
    so the correction is injected again. (A corrected record has a new id of its own.)"""
    return frozenset(r[0] for r in conn.execute(
        "SELECT i.item_id FROM recall_events e JOIN recall_injections i ON i.receipt_id = e.receipt_id"
        " LEFT JOIN memory_documents d ON d.document_id = i.item_id"
        " WHERE e.session_id=? AND e.compaction_epoch=? AND e.injected_count > 0"
        " GROUP BY i.item_id HAVING MAX(d.updated_at) IS NULL OR MAX(d.updated_at) <= MAX(i.created_at)",
        (session_id, epoch)))


def count(conn) -> int:
    return scalar(conn, "SELECT COUNT(*) FROM recall_events") or 0
