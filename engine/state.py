"""Durable switches a person sets, kept in the store so they survive a restart and are the same
for every process that opens it (the server, the CLI, the tray): today, whether memory is paused.

Paused memory neither observes nor recalls: turns are not recorded, nothing new is queued, recall
injects nothing, and status says "paused". Reading and correcting what is stored still works.
"""

from __future__ import annotations

import json

import apsw

from .db import one

PAUSED = "memory.paused"


def get(conn: apsw.Connection, key: str, default=None):
    row = one(conn, "SELECT value FROM app_state WHERE key=?", (key,))
    return default if row is None else json.loads(row["value"])


def put(conn: apsw.Connection, key: str, value, now: int) -> None:
    conn.execute("INSERT INTO app_state(key, value, updated_at) VALUES (?,?,?)"
                 " ON CONFLICT(key) DO UPDATE SET value=excluded.value, updated_at=excluded.updated_at",
                 (key, json.dumps(value), now))


def paused_since(conn: apsw.Connection) -> int | None:
    """When memory was paused (ms), or None while it runs."""
    value = get(conn, PAUSED)
    return value.get("since") if isinstance(value, dict) else None


def set_paused(conn: apsw.Connection, paused: bool, now: int) -> None:
    put(conn, PAUSED, {"since": now} if paused else None, now)


__all__ = ["PAUSED", "get", "paused_since", "put", "set_paused"]
