"""The checkpoint backlog as a person reads it: what waits, what curation holds, what failed, what
died, and what waits for review, each with its proposal text, kind, source session and priority.

Reads only the checkpoints the caller's permission covers (inside the SQL). Each state is one
indexed query capped at `limit` rows; the counts cover every row.
"""

from __future__ import annotations

import json

import apsw

from .db import one, rows
from .policy import permitted_sql
from .wording import reason_words

# What a person calls the write path's triggers.
KINDS = {
    "explicit-memory-request": "store_memory",
    "observed-memory-proposals": "observed",
    "subagent-findings": "finding",
    "compaction-boundary": "compaction",
}
# The sections of the page, in order, and the SQL that picks each one's rows.
SECTIONS = (
    ("leased", "c.status = 'leased'", "c.lease_expires_at ASC"),
    ("failed", "c.status = 'pending' AND c.last_error IS NOT NULL", "c.available_at ASC"),
    ("pending", "c.status = 'pending' AND c.last_error IS NULL", "c.priority DESC, c.created_at ASC"),
    ("dead", "c.status = 'dead'", "c.updated_at DESC"),
    ("review", "c.status = 'review'", "c.created_at ASC"),
    ("completed", "c.status = 'completed'", "c.updated_at DESC"),
    ("discarded", "c.status = 'discarded'", "c.updated_at DESC"),
)
ACTIVE = ("leased", "failed", "pending")  # work in flight: the page refreshes itself while any is there


def _proposal(payload_json: str) -> dict:
    try:
        payload = json.loads(payload_json)
    except ValueError:
        return {"title": "", "content": "(unreadable payload)"}
    if "scrubbed" in payload:
        return {"title": "", "content": f"(removed: {payload['scrubbed']})"}
    proposal = payload.get("proposal") or {}
    return {"title": proposal.get("title") or "", "content": proposal.get("content") or "",
            "memory_class": proposal.get("memory_class"), "edited": (payload.get("reviewed") or {}).get("edited")}


def _outcomes(conn: apsw.Connection, found: list[dict]) -> None:
    """What curation made of each completed checkpoint, in words: its last decision's reason ("refused:
    this claim was deleted as wrong", "not kept: already said") and the memory it names, if live.
    A proposal refused by a tombstone said nothing before: it looked as kept as any other."""
    for row in found:
        event = one(conn, "SELECT action, reason, targets_json FROM curation_events WHERE checkpoint_id=?"
                          " ORDER BY event_id DESC LIMIT 1", (row["checkpoint_id"],))
        if event is None:
            row.update(action=None, reason=None, outcome=None, memory_id=None)
            continue
        targets = json.loads(event["targets_json"] or "[]")
        live = next((t for t in targets if one(
            conn, "SELECT 1 AS x FROM memory_documents WHERE document_id=? AND deleted_at IS NULL UNION ALL"
                  " SELECT 1 FROM memory_records r WHERE r.record_id=? AND r.is_tombstone=0 AND NOT EXISTS"
                  " (SELECT 1 FROM memory_records n WHERE n.supersedes_record_id = r.record_id)", (t, t))), None)
        row.update(action=event["action"], reason=event["reason"], outcome=reason_words(event["reason"]),
                   memory_id=live)


def backlog(conn: apsw.Connection, *, ceiling: str, boundaries, limit: int = 25) -> dict:
    """Counts per section and up to `limit` checkpoints of each, with what they propose."""
    where, params = permitted_sql("c", ceiling, boundaries)
    counts = {name: 0 for name, _, _ in SECTIONS}
    for status, failed, n in conn.execute(
            "SELECT c.status, c.last_error IS NOT NULL AND c.status = 'pending', COUNT(*) FROM memory_checkpoints c"
            f" WHERE {where} GROUP BY 1, 2", params):
        counts["failed" if failed else status] = counts.get("failed" if failed else status, 0) + n
    sections = {}
    for name, pick, order in SECTIONS:
        if not counts[name]:
            sections[name] = []
            continue
        found = rows(
            conn,
            "SELECT c.checkpoint_id, c.session_id, c.trigger_type, c.priority, c.status, c.attempts, c.last_error,"
            " c.lease_owner, c.lease_expires_at, c.available_at, c.audience, c.boundary, c.created_at, c.updated_at,"
            " c.payload_json, s.title AS session_title FROM memory_checkpoints c"
            " LEFT JOIN sessions s ON s.session_id = c.session_id"
            f" WHERE {pick} AND {where} ORDER BY {order} LIMIT ?", (*params, max(1, min(int(limit), 200))))
        for row in found:
            row.update(_proposal(row.pop("payload_json")))
            row["kind"] = KINDS.get(row["trigger_type"], row["trigger_type"])
        if name == "completed":
            _outcomes(conn, found)
        sections[name] = found
    return {"counts": counts, "sections": sections, "active": any(counts[n] for n in ACTIVE)}


__all__ = ["ACTIVE", "KINDS", "SECTIONS", "backlog"]
