"""A memory's past, for the person looking at it: the diff between two revisions, where it came
from (the session's conversation with its source turns, or the imported file and line), and
each recall that injected it (with the message that asked).

Read functions (a snapshot connection first). Sessions and receipts are read through the
caller's permission (`permitted_sql`): a memory a token may see can come from a session it may
not, and then only that the session exists is said, never what was in it.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass

import apsw

from .db import one, rows
from .memory import MemoryItem
from .overview import turns as session_turns
from .policy import permitted_sql
from .store import record_chain

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")  # spaces, words, single punctuation marks
MAX_TURNS = 200


@dataclass(frozen=True)
class DiffPart:
    op: str  # "equal" | "insert" | "delete"
    text: str


def diff_words(old: str, new: str) -> list[DiffPart]:
    """Word by word, what `new` deleted from and inserted into `old` (whitespace kept)."""
    a, b = _TOKENS.findall(old or ""), _TOKENS.findall(new or "")
    out: list[DiffPart] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(DiffPart("equal", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(DiffPart("delete", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(DiffPart("insert", "".join(b[j1:j2])))
    return out


def provenance(conn: apsw.Connection, item: MemoryItem, *, ceiling: str,
               boundaries: tuple[str, ...] | None) -> dict:
    """Where a memory came from: {"session", "turns" (each with `source`), "files", "hidden" (beyond
    the caller), "elsewhere" (a session this store does not hold)}."""
    prov = item.provenance or {}
    session_id = prov.get("session_id")
    marked = {t for t in (prov.get("turns") or []) if isinstance(t, int)}
    files = [e for e in (prov.get("external") or []) if isinstance(e, dict) and e.get("kind") == "file"]
    out = {"session": None, "turns": [], "files": files, "hidden": False, "elsewhere": False,
           "source_turns": sorted(marked), "later": []}
    if not session_id:
        return out
    where, params = permitted_sql("s", ceiling, boundaries)
    session = one(conn, f"SELECT s.* FROM sessions s WHERE s.session_id=? AND {where}", (session_id, *params))
    if session is None:
        # not in this store at all (an imported memory: an export carries no conversations), or
        # beyond the caller: said apart, as the memory itself is one the caller sees
        known = one(conn, "SELECT 1 FROM sessions WHERE session_id=?", (session_id,))
        out["hidden" if known else "elsewhere"] = True
        return out
    turns = session_turns(conn, session_id)
    if len(turns) > MAX_TURNS and marked:  # a long session: the source turns with some context
        keep = {i for t in marked for i in range(t - 3, t + 4)}
        turns = [t for t in turns if t["turn_index"] in keep]
    for t in turns[:MAX_TURNS]:
        t["source"] = t["turn_index"] in marked
        out["turns"].append(t)
    out["session"] = session
    out["later"] = _added_later(conn, item, session_id, ceiling, boundaries)
    return out


def _added_later(conn: apsw.Connection, item: MemoryItem, first_session: str, ceiling: str,
                 boundaries: tuple[str, ...] | None) -> list[dict]:
    """What later sessions added to the memory (curation appended, updated or consolidated what
    they said), oldest first: {"session" (None when the caller may not see it), "source_turns",
    "turns" (the source turns alone), "created_at"}. The memory's own provenance names only the
    session that created it."""
    where, params = permitted_sql("c", ceiling, boundaries)
    found = rows(
        conn,
        "SELECT v.created_at, c.payload_json FROM curation_events v"
        " JOIN memory_checkpoints c ON c.checkpoint_id = v.checkpoint_id"
        " WHERE v.action IN ('append', 'update', 'consolidate')"
        " AND EXISTS (SELECT 1 FROM json_each(v.targets_json) j WHERE j.value = ?)"
        f" AND {where} ORDER BY v.created_at, v.event_id LIMIT 50", (item.id, *params))
    swhere, sparams = permitted_sql("s", ceiling, boundaries)
    sessions: dict[str, tuple[dict | None, list[dict]]] = {}  # each session read once, however many events
    out = []
    for event in found:
        try:
            prov = (json.loads(event["payload_json"] or "{}").get("provenance") or {})
        except ValueError:
            continue
        session_id = prov.get("session_id")
        marked = sorted({t for t in (prov.get("turns") or []) if isinstance(t, int)})
        if not session_id or session_id == first_session:
            continue
        if session_id not in sessions:
            session = one(conn, f"SELECT s.* FROM sessions s WHERE s.session_id=? AND {swhere}",
                          (session_id, *sparams))
            sessions[session_id] = (session, session_turns(conn, session_id) if session else [])
        session, turns = sessions[session_id]
        said = [t for t in turns if t["turn_index"] in marked]
        out.append({"session": session, "source_turns": marked, "turns": said, "created_at": event["created_at"]})
    return out


def chain_ids(conn: apsw.Connection, item: MemoryItem) -> list[str]:
    """The item's id and, for a record, every earlier record its chain superseded."""
    return [item.id] if item.kind != "record" else record_chain(conn, item.id)


def recall_history(conn: apsw.Connection, item: MemoryItem, *, ceiling: str,
                   boundaries: tuple[str, ...] | None, limit: int = 50) -> dict:
    """The recalls that injected this memory (newest first, receipts still kept) and its totals."""
    ids = chain_ids(conn, item)
    marks = ",".join("?" * len(ids))
    where, params = permitted_sql("s", ceiling, boundaries)
    found = rows(
        conn,
        "SELECT e.receipt_id, e.session_id, e.query, e.created_at, s.title AS session_title"
        " FROM recall_injections i JOIN recall_events e ON e.receipt_id = i.receipt_id"
        " JOIN sessions s ON s.session_id = e.session_id"
        f" WHERE i.item_id IN ({marks}) AND {where} ORDER BY i.created_at DESC LIMIT ?",
        (*ids, *params, max(1, min(int(limit), 200))))
    stats = one(conn, f"SELECT SUM(recalled_count) AS n, MAX(last_recalled_at) AS last FROM memory_recall_stats"
                      f" WHERE item_id IN ({marks})", ids) or {}
    return {"receipts": found, "count": stats.get("n") or 0, "last": stats.get("last")}


__all__ = ["DiffPart", "chain_ids", "diff_words", "provenance", "recall_history"]
