"""People's feedback on recalls, and what calibration learns from it.

Two labels, set on a receipt in the browser UI:
- `not_here`: "don't inject this here" on a memory the recall injected;
- `should_recall`: "this should have been recalled", naming a memory it did not inject.
Each label keeps a copy of the message and of the session's audience and boundary, so it outlives
the receipt (receipts are pruned after memory.recall.receipt_retention_days).

`keepmind recall calibrate --feedback` adds them to the dev data as extra examples: the message
is asked again of the labelled store (`records`), and a receipt with a `should_recall` label is a
positive whose relevant memories are the ones named; a receipt with only `not_here` labels is a
negative (nothing there should have been injected).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

import apsw

from ..db import rows, scalar
from ..errors import InvalidInput
from ..memory import new_id
from ..policy import Scope, permitted_sql

LABELS = {"not_here": "don't inject this here", "should_recall": "this should have been recalled"}


def add(conn: apsw.Connection, *, receipt_id: str, item_id: str, label: str, session_id: str, audience: str,
        boundary: str, query: str, source: str, now: int) -> str:
    """Store one label (the same label on the same memory of a receipt is kept once)."""
    if label not in LABELS:
        raise InvalidInput(f"unknown feedback {label!r}: use one of {', '.join(LABELS)}")
    feedback_id = new_id("fb")
    conn.execute("INSERT OR IGNORE INTO recall_feedback(feedback_id, receipt_id, session_id, audience, boundary,"
                 " item_id, label, query, source, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                 (feedback_id, receipt_id, session_id, audience, boundary, item_id, label, query, source, now))
    return feedback_id


def remove(conn: apsw.Connection, receipt_id: str, item_id: str, label: str) -> None:
    conn.execute("DELETE FROM recall_feedback WHERE receipt_id=? AND item_id=? AND label=?",
                 (receipt_id, item_id, label))


def for_receipt(conn: apsw.Connection, receipt_id: str) -> list[dict]:
    return rows(conn, "SELECT feedback_id, item_id, label, created_at FROM recall_feedback WHERE receipt_id=?"
                      " ORDER BY created_at", (receipt_id,))


def counts(conn: apsw.Connection, *, ceiling: str = "personal", boundaries=None) -> dict[str, int]:
    """How many labels of each kind are collected (those the caller's permission covers)."""
    where, params = permitted_sql("f", ceiling, boundaries)
    out = {label: 0 for label in LABELS}
    for label, n in conn.execute(f"SELECT f.label, COUNT(*) FROM recall_feedback f WHERE {where} GROUP BY f.label",
                                 params):
        out[label] = n
    return out


def count(conn: apsw.Connection) -> int:
    return scalar(conn, "SELECT COUNT(*) FROM recall_feedback") or 0


def grouped(conn: apsw.Connection) -> list[dict]:
    """Every labelled recall: its message, scope, and the memories under each label."""
    by_receipt: dict[str, dict] = {}
    for row in rows(conn, "SELECT receipt_id, audience, boundary, query, item_id, label FROM recall_feedback"
                          " ORDER BY created_at, feedback_id"):
        entry = by_receipt.setdefault(row["receipt_id"], {
            "receipt_id": row["receipt_id"], "audience": row["audience"], "boundary": row["boundary"],
            "query": row["query"], "labels": defaultdict(set)})
        entry["labels"][row["label"]].add(row["item_id"])
    return list(by_receipt.values())


def records(engine, *, config=None, keep_top: int = 20, model_id: str | None = None,
            say: Callable[[str], None] | None = None) -> list:
    """The labelled recalls of `engine`'s store as calibration records (evaluation.JobRecord).

    Each message is recalled again (without a receipt) in the scope it was labelled in. With
    `model_id`, a recall that ran under another embedder is left out (a floor belongs to one model).
    """
    from .evaluation import record_of

    with engine.db.snapshot() as conn:
        labelled = grouped(conn)
    out = []
    for entry in labelled:
        scope = Scope(entry["audience"], entry["boundary"])
        trace = engine.recaller.trace(scope, entry["query"], config=config, calibrating=True)
        if model_id is not None and trace.model_id != model_id:
            if say:
                say(f"feedback on {entry['receipt_id']} left out: recalled with {trace.model_id or 'no embedder'}, "
                    f"not {model_id}")
            continue
        should = frozenset(entry["labels"].get("should_recall", ()))
        out.append(record_of(trace, engine.recaller.stats, kind="positive" if should else "negative",
                             source="positive" if should else "feedback", qid=f"feedback:{entry['receipt_id']}",
                             store="feedback", relevant=should, keep_top=keep_top))
    return out


__all__ = ["LABELS", "add", "count", "counts", "for_receipt", "grouped", "records", "remove"]
