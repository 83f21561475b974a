"""What the store holds and what happened to it: counts, the checkpoint queue, sessions, recall
receipts, tombstones and curation events, as read-only listings for the CLI, the UI and the tray.

Each listing takes the caller's permission (an audience ceiling and boundaries, None for any:
a token's shape) and reads only the rows it covers, inside the SQL. Listings page by keyset
(`before`: the created_at of the last row seen), never by OFFSET.
"""

from __future__ import annotations

import json

import apsw

from .db import rows, scalar
from .graph import scope_sql
from .policy import permitted_sql, visible_sql
from .wording import reason_words

CHECKPOINT_STATES = ("pending", "leased", "completed", "dead", "review", "discarded")
MAX_LIMIT = 500


def _limit(limit: int) -> int:
    return max(1, min(int(limit), MAX_LIMIT))


def stats(conn: apsw.Connection, since: int) -> dict:
    """Anchors, live documents and records, current edges, queued checkpoints; formed and
    recalled since `since` (the engine's start)."""
    return {
        "anchors": scalar(conn, "SELECT COUNT(*) FROM memory_anchors WHERE status='active'"),
        "documents": scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE deleted_at IS NULL"),
        "records": scalar(
            conn,
            "SELECT COUNT(*) FROM memory_records r WHERE r.is_tombstone=0 AND NOT EXISTS"
            " (SELECT 1 FROM memory_records s WHERE s.supersedes_record_id=r.record_id)"),
        "edges": scalar(conn, "SELECT COUNT(*) FROM memory_edges WHERE valid_to IS NULL"),
        "pending_checkpoints": scalar(
            conn, "SELECT COUNT(*) FROM memory_checkpoints WHERE status IN ('pending','leased')"),
        "formed_since_start": scalar(
            conn,
            "SELECT (SELECT COUNT(*) FROM memory_documents WHERE created_at >= ?)"
            " + (SELECT COUNT(*) FROM memory_records WHERE created_at >= ? AND is_tombstone=0)",
            (since, since)),
        "recalled_since_start": scalar(
            conn, "SELECT COALESCE(SUM(injected_count), 0) FROM recall_events WHERE created_at >= ?",
            (since,)),
    }


def due_checkpoints(conn: apsw.Connection, now: int) -> int:
    """Checkpoints curation would work on now: pending and due, or leased."""
    return scalar(conn, "SELECT COUNT(*) FROM memory_checkpoints WHERE (status='pending' AND available_at<=?)"
                        " OR status='leased'", (now,))


def visible_counts(conn: apsw.Connection, scope, now: int, since: int) -> dict:
    """What a viewer may see, counted: anchors, live documents and records, current edges, and
    since `since` (e.g. today) the memories formed, the recalls made and the memories they injected."""
    out = {}
    a_where, a_params = scope_sql("a", scope)
    out["anchors"] = scalar(conn, f"SELECT COUNT(*) FROM memory_anchors a WHERE a.status='active' AND {a_where}",
                            a_params)
    formed = 0
    for key, table, kind, time_col in (("documents", "memory_documents", "document", "created_at"),
                                       ("records", "memory_records", "record", "created_at")):
        where, params = visible_sql("m", scope, now, kind=kind, include_trace=True)
        out[key] = scalar(conn, f"SELECT COUNT(*) FROM {table} m WHERE {where}", params)
        formed += scalar(conn, f"SELECT COUNT(*) FROM {table} m WHERE m.{time_col} >= ? AND {where}",
                         (since, *params))
    e_where, e_params = scope_sql("e", scope)
    out["edges"] = scalar(conn, f"SELECT COUNT(*) FROM memory_edges e WHERE e.valid_to IS NULL AND {e_where}",
                          e_params)
    out["formed_today"] = formed
    s_where, s_params = permitted_sql("s", scope.audience, None if scope.any_boundary else scope.readable_boundaries)
    # Two counts, not one: the recalls (what the overview lists) and the memories they injected (a
    # recall gives several); "Recalled today 3" beside two listed recalls read as a miscount.
    out["recalls_today"], out["injected_today"] = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(e.injected_count), 0) FROM recall_events e JOIN sessions s"
        f" ON s.session_id = e.session_id WHERE e.created_at >= ? AND {s_where}", (since, *s_params)).fetchone()
    return out


def checkpoint_overview(conn: apsw.Connection, *, limit: int = 50, ceiling: str = "personal",
                        boundaries: tuple[str, ...] | None = None) -> dict:
    """Checkpoint counts by state and the pending list (highest priority, then oldest first),
    counting only the checkpoints the caller's permission covers."""
    where, params = permitted_sql("c", ceiling, boundaries)
    counts = {state: 0 for state in CHECKPOINT_STATES}
    for state, n in conn.execute(f"SELECT c.status, COUNT(*) FROM memory_checkpoints c WHERE {where}"
                                 " GROUP BY c.status", params):
        counts[state] = n
    pending = rows(
        conn,
        "SELECT c.checkpoint_id, c.session_id, c.trigger_type, c.priority, c.status, c.attempts,"
        " c.last_error, c.audience, c.boundary, c.created_at, c.available_at FROM memory_checkpoints c"
        f" WHERE c.status IN ('pending', 'leased') AND {where} ORDER BY c.priority DESC, c.created_at ASC"
        " LIMIT ?", (*params, _limit(limit)))
    return {"counts": counts, "pending": pending}


def checkpoint(conn: apsw.Connection, checkpoint_id: str, *, ceiling: str,
               boundaries: tuple[str, ...] | None) -> dict | None:
    """One checkpoint the caller may see: its state, and once curated, the memories it formed or
    touched (from its curation events) and the last decision's action and reason."""
    where, params = permitted_sql("c", ceiling, boundaries)
    found = rows(conn, "SELECT c.checkpoint_id, c.session_id, c.trigger_type, c.priority, c.status, c.attempts,"
                       " c.last_error, c.created_at, c.updated_at, c.completed_at FROM memory_checkpoints c"
                       f" WHERE c.checkpoint_id = ? AND {where}", (checkpoint_id, *params))
    if not found:
        return None
    out = found[0]
    events = rows(conn, "SELECT action, targets_json, reason FROM curation_events WHERE checkpoint_id=?"
                        " ORDER BY event_id", (checkpoint_id,))
    ids: list[str] = []
    for event in events:
        ids += [t for t in json.loads(event["targets_json"] or "[]") if t not in ids]
    out["memory_ids"] = ids
    out["action"] = events[-1]["action"] if events else None
    out["reason"] = events[-1]["reason"] if events else None
    out["reason_words"] = reason_words(out["reason"]) if out["reason"] else None  # "refused: a person deleted…"
    return out


def sessions(conn: apsw.Connection, *, ceiling: str, boundaries: tuple[str, ...] | None,
             limit: int = 50, before: int | None = None, status: str | None = None) -> list[dict]:
    """Sessions (newest first) with their turn count and the memories they formed or added to."""
    where, params = permitted_sql("s", ceiling, boundaries)
    clauses = [where]
    if before is not None:
        clauses.append("s.created_at < ?")
        params.append(before)
    if status:
        clauses.append("s.status = ?")
        params.append(status)
    return rows(
        conn,
        "SELECT s.session_id, s.audience, s.boundary, s.channel, s.title, s.token_id, s.status,"
        " s.created_at, s.updated_at, s.ended_at,"
        " (SELECT COUNT(*) FROM session_turns t WHERE t.session_id = s.session_id) AS turns,"
        # formed here, or added to by what was said here (an append to Tom's living document is
        # this session's memory too): each memory once, and only while it stands (one deleted,
        # erased or merged away is no longer this session's memory)
        " (SELECT COUNT(*) FROM (SELECT d.document_id FROM memory_documents d WHERE d.session_id = s.session_id"
        "   UNION SELECT j.value FROM curation_events e, json_each(e.targets_json) j"
        "   WHERE e.session_id = s.session_id AND e.action IN ('append', 'update', 'consolidate')) u"
        "   JOIN memory_documents live ON live.document_id = u.document_id AND live.deleted_at IS NULL)"
        # a record chain begun here, unless its newest record is a tombstone (a restore supersedes that)
        " + (SELECT COUNT(*) FROM memory_records r WHERE r.session_id = s.session_id"
        "    AND r.supersedes_record_id IS NULL AND r.erased_at IS NULL AND 0 = ("
        "      WITH RECURSIVE later(id, dead, depth) AS (SELECT r.record_id, r.is_tombstone, 0 UNION ALL"
        "        SELECT n.record_id, n.is_tombstone, later.depth + 1 FROM memory_records n"
        "        JOIN later ON n.supersedes_record_id = later.id)"
        "      SELECT dead FROM later ORDER BY depth DESC LIMIT 1)) AS memories_formed"
        f" FROM sessions s WHERE {' AND '.join(clauses)} ORDER BY s.created_at DESC LIMIT ?",
        (*params, _limit(limit)))


def turns(conn: apsw.Connection, session_id: str) -> list[dict]:
    """A session's persisted turns, in order (secret values were removed before they were stored)."""
    out = rows(conn, "SELECT turn_index, user_text, assistant_text, tools_json, recalled_ids_json,"
                     " skills_json, created_at FROM session_turns WHERE session_id=? ORDER BY turn_index",
               (session_id,))
    for row in out:
        for key in ("tools_json", "recalled_ids_json", "skills_json"):
            row[key.removesuffix("_json")] = json.loads(row.pop(key) or "[]")
    return out


def receipts(conn: apsw.Connection, *, ceiling: str, boundaries: tuple[str, ...] | None,
             limit: int = 50, before: int | None = None, session_id: str | None = None,
             injected: bool | None = None, degraded: bool | None = None) -> list[dict]:
    """Recall receipts (newest first) of sessions the caller may act in, without their bodies."""
    where, params = permitted_sql("s", ceiling, boundaries)
    clauses = [where]
    for column, value in (("e.session_id", session_id),):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if before is not None:
        clauses.append("e.created_at < ?")
        params.append(before)
    if injected is not None:
        clauses.append("e.injected_count > 0" if injected else "e.injected_count = 0")
    if degraded is not None:
        clauses.append("e.degraded != 0" if degraded else "e.degraded = 0")
    return rows(
        conn,
        "SELECT e.receipt_id, e.session_id, s.channel, e.query, e.injected_count, e.degraded, e.total_ms,"
        " e.created_at FROM recall_events e JOIN sessions s ON s.session_id = e.session_id"
        f" WHERE {' AND '.join(clauses)} ORDER BY e.created_at DESC LIMIT ?", (*params, _limit(limit)))


def tombstones(conn: apsw.Connection, *, ceiling: str, boundaries: tuple[str, ...] | None,
               limit: int = 50, before: int | None = None) -> list[dict]:
    """What people deleted as wrong (newest first): the memory, its scope, when and why."""
    where, params = permitted_sql("t", ceiling, boundaries)
    if before is not None:
        where += " AND t.created_at < ?"
        params.append(before)
    return rows(conn, "SELECT t.tombstone_id, t.memory_id, t.audience, t.boundary, t.reason, t.created_at"
                      f" FROM tombstones t WHERE {where} ORDER BY t.created_at DESC LIMIT ?",
                (*params, _limit(limit)))


def curation_events(conn: apsw.Connection, *, ceiling: str, boundaries: tuple[str, ...] | None,
                    memory_id: str | None = None, limit: int = 50, before: int | None = None) -> list[dict]:
    """Curation decisions (newest first) on checkpoints the caller may see; with `memory_id`, the
    ones that name that memory among their targets."""
    where, params = permitted_sql("c", ceiling, boundaries)
    clauses = [where]
    if memory_id is not None:
        clauses.append("EXISTS (SELECT 1 FROM json_each(v.targets_json) j WHERE j.value = ?)")
        params.append(memory_id)
    if before is not None:
        clauses.append("v.created_at < ?")
        params.append(before)
    out = rows(
        conn,
        "SELECT v.event_id, v.checkpoint_id, v.session_id, v.action, v.targets_json, v.decided_by,"
        " v.prompt_version, v.reason, v.created_at FROM curation_events v"
        " JOIN memory_checkpoints c ON c.checkpoint_id = v.checkpoint_id"
        f" WHERE {' AND '.join(clauses)} ORDER BY v.created_at DESC, v.event_id DESC LIMIT ?",
        (*params, _limit(limit)))
    for row in out:
        row["targets"] = json.loads(row.pop("targets_json") or "[]")
    return out


__all__ = ["CHECKPOINT_STATES", "checkpoint", "checkpoint_overview", "curation_events", "receipts", "sessions",
           "stats", "tombstones", "turns", "visible_counts"]
