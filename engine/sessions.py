"""Sessions and their persisted turns: the observer's transcript survives a crash.

What a caller sends is persisted redacted (secretfilter): a session's title and channel, a turn's
texts and its tool, skill and recalled-id lists never keep a secret's value.
"""

from __future__ import annotations

import json

import apsw

from .db import one, scalar
from .errors import InvalidInput, NotFound
from .memory import new_id, parse_id
from .policy import AUDIENCES, Scope, check_name
from .secretfilter import redact_strings, redact_text

MAX_TURN_CHARS = 200_000


def open_session(conn: apsw.Connection, audience: str, boundary: str, now: int, *,
                 channel: str | None = None, title: str | None = None,
                 token_id: str | None = None) -> str:
    if audience not in AUDIENCES:
        raise InvalidInput(f"unknown audience {audience!r}: use one of {', '.join(AUDIENCES)}")
    boundary = check_name(boundary)
    if title is not None and not isinstance(title, str):
        raise InvalidInput("title must be a string")
    if channel is not None:
        if not isinstance(channel, str):
            raise InvalidInput("channel must be a string")
        channel = check_name(redact_text(channel), "channel", reserved=()) if channel.strip() else None
    title = redact_text(title)
    if audience == "public":  # inert: its row exists so its calls can be answered, nothing it sent is kept
        title = channel = None
    session_id = new_id("ses")
    conn.execute(
        "INSERT INTO sessions(session_id, audience, boundary, channel, title, token_id, created_at,"
        " updated_at) VALUES (?,?,?,?,?,?,?,?)",
        (session_id, audience, boundary, channel, title, token_id, now, now),
    )
    return session_id


def session_row(conn: apsw.Connection, session_id: str) -> dict:
    if not isinstance(session_id, str) or not session_id.startswith("ses-"):
        raise InvalidInput(f"{session_id!r} is not a session id: ids look like ses-<32 hex digits>")
    row = one(conn, "SELECT * FROM sessions WHERE session_id=?", (session_id,))
    if row is None:
        raise no_session(session_id)
    return row


def no_session(session_id: str) -> NotFound:
    """The answer for a session that does not exist, and for one the caller may not see: the two
    must not be told apart."""
    return NotFound(f"no session {session_id}: open one first")


def scope_of(row: dict) -> Scope:
    """A session's own scope, without the boundaries settings may grant it (Engine.scope adds them)."""
    return Scope(row["audience"], row["boundary"], row["session_id"])


def _json_list(value, what: str) -> str:
    if value is None:
        return "[]"
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{what} must be a list of strings")
    return json.dumps(redact_strings(value))


def add_turn(conn: apsw.Connection, session_id: str, now: int, *, user: str, assistant: str,
             tools=None, recalled_ids=None, skills=None) -> int:
    """Persist one completed turn (secret values redacted); returns its 1-based index in the session."""
    row = session_row(conn, session_id)
    if row["status"] == "ended":
        raise InvalidInput(f"session {session_id} has ended: open a new session")
    for what, v in (("user", user), ("assistant", assistant)):
        if v is None:
            continue
        if not isinstance(v, str):
            raise InvalidInput(f"{what} must be a string")
        if len(v) > MAX_TURN_CHARS:
            raise InvalidInput(f"{what} is longer than {MAX_TURN_CHARS} characters")
    if not (user or "").strip() and not (assistant or "").strip():
        raise InvalidInput("a turn needs a user message or an assistant reply")
    if recalled_ids is not None and isinstance(recalled_ids, (list, tuple)):
        try:  # ids the observer looks up: a wrong one is said now, not skipped at distillation
            recalled_ids = [parse_id(i) for i in recalled_ids]
        except InvalidInput:  # not echoed: what was sent in its place may be anything, a secret too
            raise InvalidInput("recalled_ids holds something that is not a memory id: ids look like "
                               "doc-<32 hex digits> or rec-<32 hex digits>, as recall returned them") from None
    index = (scalar(conn, "SELECT MAX(turn_index) FROM session_turns WHERE session_id=?",
                    (session_id,)) or 0) + 1
    conn.execute(
        "INSERT INTO session_turns(session_id, turn_index, user_text, assistant_text, tools_json,"
        " recalled_ids_json, skills_json, created_at) VALUES (?,?,?,?,?,?,?,?)",
        (session_id, index, redact_text(user or ""), redact_text(assistant or ""), _json_list(tools, "tools"),
         _json_list(recalled_ids, "recalled_ids"), _json_list(skills, "skills"), now),
    )
    conn.execute("UPDATE sessions SET updated_at=?, status='open' WHERE session_id=?", (now, session_id))
    return index


def end_session(conn: apsw.Connection, session_id: str, now: int) -> None:
    session_row(conn, session_id)
    conn.execute("UPDATE sessions SET status='ended', ended_at=?, updated_at=? WHERE session_id=?"
                 " AND status != 'ended'", (now, now, session_id))


def mark_compacted(conn: apsw.Connection, session_id: str, now: int) -> int:
    """A compaction starts a new epoch: memories injected before it may be injected again."""
    session_row(conn, session_id)
    conn.execute("UPDATE sessions SET compaction_epoch = compaction_epoch + 1, updated_at=?"
                 " WHERE session_id=?", (now, session_id))
    return scalar(conn, "SELECT compaction_epoch FROM sessions WHERE session_id=?", (session_id,))
