"""curation_events: one row per decision, never updated (the write path's audit trail)."""

from __future__ import annotations

import json

import apsw

from ..db import rows

RULE = "rule"


def record_event(conn: apsw.Connection, *, checkpoint_id: str | None, session_id: str | None,
                 action: str, reason: str, now: int, targets=(), decided_by: str = RULE,
                 prompt_version: str | None = None, response_sha256: str | None = None,
                 detail: dict | None = None) -> int:
    """Append a decision. `detail` must never hold secret values (kinds and ids only)."""
    conn.execute(
        "INSERT INTO curation_events(checkpoint_id, session_id, action, targets_json, decided_by,"
        " prompt_version, response_sha256, reason, detail_json, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (checkpoint_id, session_id, action, json.dumps([t for t in targets if t]), decided_by,
         prompt_version, response_sha256, reason, json.dumps(detail or {}, sort_keys=True), now),
    )
    return conn.last_insert_rowid()


def events_for(conn: apsw.Connection, checkpoint_id: str) -> list[dict]:
    found = rows(conn, "SELECT * FROM curation_events WHERE checkpoint_id=? ORDER BY event_id",
                 (checkpoint_id,))
    for row in found:
        row["targets"] = json.loads(row.pop("targets_json") or "[]")
        row["detail"] = json.loads(row.pop("detail_json") or "{}")
    return found
