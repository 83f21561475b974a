"""The durable checkpoint queue: every proposal waits here until curation decides.

A worker leases the highest-priority, oldest pending checkpoint (owner + expiry). An expired
lease, or one held by a worker process that no longer exists, returns the checkpoint to pending;
each lease counts as an attempt, so a checkpoint that kills its worker every time is
dead-lettered instead of looping. Failures back off exponentially; dead letters keep their last
error and can be retried. Completing a checkpoint runs in the same transaction as the memory
writes (the caller's write function calls `complete`), and `complete` first checks the lease is
still held, so a checkpoint is never applied twice.

Nothing secret enters the queue: `enqueue` redacts the payload first and, when it found a secret,
writes only an audit event.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Callable

import apsw

from ..db import one, rows
from ..errors import InvalidInput, NotFound
from ..memory import new_id
from ..secretfilter import redact, redact_value
from .events import record_event

TRIGGERS = {
    "explicit-memory-request": 100,
    "compaction-boundary": 90,
    "subagent-findings": 70,
    "observed-memory-proposals": 60,
    "markdown-import": 50,  # a person's bulk import: never ahead of what agents store
}
# review: waits for a person (no worker leases it); discarded: a person dropped it.
STATES = ("pending", "leased", "completed", "dead", "review", "discarded")
BACKOFF_BASE_MS = 5_000
BACKOFF_CAP_MS = 10 * 60_000


class LeaseLost(Exception):
    """The checkpoint is no longer leased by this worker (expired and taken by another)."""


@dataclass(frozen=True)
class Enqueued:
    checkpoint_id: str | None
    blocked_kinds: tuple[str, ...] = ()

    @property
    def blocked(self) -> bool:
        return bool(self.blocked_kinds)


@dataclass(frozen=True)
class Lease:
    checkpoint_id: str
    owner: str
    expires_at: int
    attempts: int
    trigger: str
    priority: int
    session_id: str | None
    audience: str
    boundary: str
    payload_json: str
    created_at: int


def enqueue(conn: apsw.Connection, *, trigger: str, payload: dict, audience: str, boundary: str,
            session_id: str | None, now: int, priority: int | None = None, review: bool = False) -> Enqueued:
    """Queue a proposal; a payload holding a secret is not queued, only audited.

    With `review`, it waits in state `review` for a person (review.py), which no worker leases."""
    if trigger not in TRIGGERS:
        raise InvalidInput(f"unknown checkpoint trigger {trigger!r}: use one of {', '.join(TRIGGERS)}")
    clean, kinds = redact_value(payload)
    if kinds:
        record_event(conn, checkpoint_id=None, session_id=session_id, action="blocked",
                     reason="secret", now=now, detail={"kinds": kinds, "trigger": trigger})
        return Enqueued(None, tuple(kinds))
    checkpoint_id = new_id("cp")
    conn.execute(
        "INSERT INTO memory_checkpoints(checkpoint_id, session_id, trigger_type, priority, status,"
        " payload_json, audience, boundary, available_at, created_at, updated_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (checkpoint_id, session_id, trigger, TRIGGERS[trigger] if priority is None else priority,
         "review" if review else "pending",
         json.dumps(clean, sort_keys=True), audience, boundary, now, now, now),
    )
    return Enqueued(checkpoint_id)


def backoff_ms(attempts: int) -> int:
    return min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** max(0, attempts - 1))


def _expire(conn: apsw.Connection, row: dict, now: int, max_attempts: int, why: str) -> None:
    if row["attempts"] >= max_attempts:
        error = f"{why}; gave up after {row['attempts']} attempts"
        conn.execute(
            "UPDATE memory_checkpoints SET status='dead', last_error=?, lease_owner=NULL,"
            " lease_expires_at=NULL, updated_at=? WHERE checkpoint_id=?",
            (error, now, row["checkpoint_id"]))
        record_event(conn, checkpoint_id=row["checkpoint_id"], session_id=row["session_id"],
                     action="dead_letter", reason=error, now=now)
    else:
        conn.execute(
            "UPDATE memory_checkpoints SET status='pending', last_error=?, lease_owner=NULL,"
            " lease_expires_at=NULL, available_at=?, updated_at=? WHERE checkpoint_id=?",
            (why, now, now, row["checkpoint_id"]))


def reclaim(conn: apsw.Connection, now: int, max_attempts: int,
            owner_alive: Callable[[str], bool] | None = None) -> int:
    """Return expired leases (and leases of dead worker processes) to the queue."""
    leased = rows(conn, "SELECT checkpoint_id, session_id, attempts, lease_owner, lease_expires_at"
                        " FROM memory_checkpoints WHERE status='leased'")
    count = 0
    for row in leased:
        if row["lease_expires_at"] is not None and row["lease_expires_at"] <= now:
            _expire(conn, row, now, max_attempts, "lease expired (the worker stopped or stalled)")
            count += 1
        elif owner_alive is not None and not owner_alive(row["lease_owner"] or ""):
            _expire(conn, row, now, max_attempts, "the worker holding the lease is gone (crash)")
            count += 1
    return count


def lease_next(conn: apsw.Connection, owner: str, now: int, lease_ms: int) -> Lease | None:
    """Lease the highest-priority, oldest available checkpoint (one attempt), or None."""
    row = one(conn, "SELECT * FROM memory_checkpoints WHERE status='pending' AND available_at<=?"
                    " ORDER BY priority DESC, created_at ASC, rowid ASC LIMIT 1", (now,))
    if row is None:
        return None
    attempts = row["attempts"] + 1
    conn.execute(
        "UPDATE memory_checkpoints SET status='leased', lease_owner=?, lease_expires_at=?, attempts=?,"
        " updated_at=? WHERE checkpoint_id=? AND status='pending'",
        (owner, now + lease_ms, attempts, now, row["checkpoint_id"]))
    return Lease(row["checkpoint_id"], owner, now + lease_ms, attempts, row["trigger_type"],
                 row["priority"], row["session_id"], row["audience"], row["boundary"],
                 row["payload_json"], row["created_at"])


def hold(conn: apsw.Connection, checkpoint_id: str, owner: str) -> None:
    """Raise LeaseLost unless `owner` still holds the lease (checked inside the write transaction)."""
    row = one(conn, "SELECT status, lease_owner FROM memory_checkpoints WHERE checkpoint_id=?",
              (checkpoint_id,))
    if row is None or row["status"] != "leased" or row["lease_owner"] != owner:
        raise LeaseLost(f"checkpoint {checkpoint_id} is no longer leased by {owner}")


def complete(conn: apsw.Connection, checkpoint_id: str, owner: str, now: int, *,
             scrub_reason: str | None = None) -> None:
    """Mark done (in the caller's transaction, with its memory writes); optionally scrub the payload."""
    hold(conn, checkpoint_id, owner)
    payload_sql = ", payload_json=?" if scrub_reason else ""
    params = [now, now] + ([json.dumps({"scrubbed": scrub_reason})] if scrub_reason else [])
    conn.execute(
        "UPDATE memory_checkpoints SET status='completed', completed_at=?, updated_at=?,"
        f" lease_owner=NULL, lease_expires_at=NULL{payload_sql} WHERE checkpoint_id=?",
        (*params, checkpoint_id))


def fail(conn: apsw.Connection, checkpoint_id: str, owner: str, error: str, now: int, *,
         max_attempts: int, permanent: bool = False) -> str:
    """Record a failed attempt: back to pending after a backoff, or dead. Returns the new status."""
    row = one(conn, "SELECT * FROM memory_checkpoints WHERE checkpoint_id=?", (checkpoint_id,))
    if row is None or row["status"] != "leased" or row["lease_owner"] != owner:
        return "lost"
    error = redact(error)[0][:1000]  # an error may quote a model reply; never keep a secret in it
    if permanent or row["attempts"] >= max_attempts:
        reason = error if permanent else f"{error}; gave up after {row['attempts']} attempts"
        conn.execute(
            "UPDATE memory_checkpoints SET status='dead', last_error=?, lease_owner=NULL,"
            " lease_expires_at=NULL, updated_at=? WHERE checkpoint_id=?", (reason, now, checkpoint_id))
        record_event(conn, checkpoint_id=checkpoint_id, session_id=row["session_id"],
                     action="dead_letter", reason=reason, now=now)
        return "dead"
    conn.execute(
        "UPDATE memory_checkpoints SET status='pending', last_error=?, lease_owner=NULL,"
        " lease_expires_at=NULL, available_at=?, updated_at=? WHERE checkpoint_id=?",
        (error, now + backoff_ms(row["attempts"]), now, checkpoint_id))
    return "pending"


def release(conn: apsw.Connection, owner: str, now: int) -> int:
    """A stopping worker hands its leases back; a graceful stop is not a failed attempt."""
    changed = conn.execute(
        "UPDATE memory_checkpoints SET status='pending', attempts=MAX(0, attempts-1), lease_owner=NULL,"
        " lease_expires_at=NULL, available_at=?, updated_at=? WHERE status='leased' AND lease_owner=?"
        " RETURNING checkpoint_id", (now, now, owner)).fetchall()
    return len(changed)


def retry(conn: apsw.Connection, checkpoint_id: str, now: int) -> None:
    """Send a dead letter back to the queue with a fresh attempt budget; a failed one that waits
    for its backoff is tried now."""
    row = one(conn, "SELECT status, last_error FROM memory_checkpoints WHERE checkpoint_id=?", (checkpoint_id,))
    if row is None:
        raise NotFound(f"no checkpoint {checkpoint_id}: list them with `keepmind checkpoints list`")
    if row["status"] == "pending" and row["last_error"]:
        conn.execute("UPDATE memory_checkpoints SET available_at=?, updated_at=? WHERE checkpoint_id=?",
                     (now, now, checkpoint_id))
        return
    if row["status"] != "dead":
        raise InvalidInput(f"checkpoint {checkpoint_id} is {row['status']}, not failed or dead: only those can be "
                           "retried")
    conn.execute("UPDATE memory_checkpoints SET status='pending', attempts=0, last_error=NULL, available_at=?,"
                 " updated_at=? WHERE checkpoint_id=?", (now, now, checkpoint_id))


DISCARDABLE = ("pending", "dead", "review")


def discard(conn: apsw.Connection, checkpoint_id: str, now: int, *, reason: str = "discarded by a person",
            action: str = "discarded") -> dict:
    """Drop a checkpoint that waits, failed or is in review: it is never curated (the row and its
    audit event stay). A leased one is being curated right now and cannot be dropped."""
    row = one(conn, "SELECT * FROM memory_checkpoints WHERE checkpoint_id=?", (checkpoint_id,))
    if row is None:
        raise NotFound(f"no checkpoint {checkpoint_id}: list them with `keepmind checkpoints list`")
    if row["status"] == "leased":
        raise InvalidInput("curation is working on this checkpoint right now: wait a moment and look again")
    if row["status"] not in DISCARDABLE:
        raise InvalidInput(f"checkpoint {checkpoint_id} is {row['status']}: only waiting, failed, dead or "
                           "in-review checkpoints can be discarded")
    conn.execute("UPDATE memory_checkpoints SET status='discarded', lease_owner=NULL, lease_expires_at=NULL,"
                 " updated_at=?, completed_at=? WHERE checkpoint_id=?", (now, now, checkpoint_id))
    record_event(conn, checkpoint_id=checkpoint_id, session_id=row["session_id"], action=action, reason=reason,
                 now=now, decided_by="person")
    return row


def list_checkpoints(conn: apsw.Connection, status: str | None = None, limit: int = 50) -> list[dict]:
    if status is not None and status not in STATES:
        raise InvalidInput(f"status must be one of {', '.join(STATES)}")
    where = "WHERE status=?" if status else ""
    params = (status, limit) if status else (limit,)
    return rows(conn, "SELECT checkpoint_id, session_id, trigger_type, priority, status, attempts,"
                      " last_error, lease_owner, lease_expires_at, available_at, created_at, updated_at,"
                      f" completed_at FROM memory_checkpoints {where}"
                      # newest first (a priority order sank the newest observed ones under every
                      # explicit store and past --limit); dead letters, which need a person, on top
                      " ORDER BY (status='dead') DESC, created_at DESC, rowid DESC LIMIT ?", params)


def owner_id(nonce: str) -> str:
    """A lease owner names this process, so a restarted worker can tell a crashed owner's leases."""
    return f"{os.uname().nodename}:{os.getpid()}:{nonce}"


def owner_alive(owner: str) -> bool:
    """False only when the owner is a process on this host that no longer exists."""
    try:
        host, pid_text, _ = owner.split(":", 2)
        pid = int(pid_text)
    except ValueError:
        return True
    if host != os.uname().nodename:
        return True
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
