"""Review before keeping: observed proposals wait for a person instead of being curated at once.

With `memory.curation.review` on, the observer queues its proposals in checkpoint state `review`,
which no worker leases. A person then, for each one:
- keeps it: it goes to the queue as it is (or with the title and text they edited) and curation
  decides as for any proposal; a person vouched for it, so it is no longer dropped for low
  confidence;
- rejects it: the checkpoint is discarded and a tombstone keeps the same claim from being
  proposed (and formed) again in that audience and boundary, as "delete as wrong" does for a
  memory. Lifting the tombstone (Deleted, restore) puts the proposal back in review.

Only the observer's proposals wait: an agent's explicit store_memory, compaction summaries and
subagent findings never do. A proposal whose claim a person already deleted or rejected does
not wait either: it goes straight to curation, which skips it (reason tombstone) and says so.
Functions take `conn` first and never commit (they run on the writer thread).
"""

from __future__ import annotations

import json

import apsw

from .. import store
from ..db import one, rows
from ..errors import InvalidInput, NotFound
from ..memory import MAX_BODY_CHARS, MAX_TITLE_CHARS, claim_fingerprints, clean_text, fingerprint, new_id, title_follows
from ..policy import permitted_sql
from ..secretfilter import refuse_secrets
from .events import record_event

OBSERVED = "observed-memory-proposals"


def waits_for_review(conn: apsw.Connection, review_on: bool, trigger: str, content: str, audience: str,
                     boundary: str) -> bool:
    """Whether a proposal queued now waits for a person (see the module's rules)."""
    return review_on and trigger == OBSERVED and not store.is_tombstoned(conn, content, audience, boundary)


def _in_review(conn: apsw.Connection, checkpoint_id: str, ceiling: str, boundaries) -> dict:
    where, params = permitted_sql("c", ceiling, boundaries)
    row = one(conn, f"SELECT c.* FROM memory_checkpoints c WHERE c.checkpoint_id=? AND {where}",
              (checkpoint_id, *params))
    if row is None:
        raise NotFound(f"no proposal {checkpoint_id} waits for review (or it is not yours to see)")
    if row["status"] != "review":
        raise InvalidInput(f"this proposal was already dealt with (it is {row['status']}): reload the queue")
    return row


def queue(conn: apsw.Connection, *, ceiling: str, boundaries, limit: int = 50) -> list[dict]:
    """Proposals waiting for review, oldest first, with their text and the session they came from."""
    where, params = permitted_sql("c", ceiling, boundaries)
    found = rows(conn, "SELECT c.checkpoint_id, c.session_id, c.audience, c.boundary, c.created_at, c.payload_json,"
                       " s.title AS session_title FROM memory_checkpoints c"
                       " LEFT JOIN sessions s ON s.session_id = c.session_id"
                       f" WHERE c.status='review' AND {where} ORDER BY c.created_at, c.rowid LIMIT ?",
                 (*params, max(1, min(int(limit), 500))))
    for row in found:
        proposal = json.loads(row.pop("payload_json")).get("proposal") or {}
        row.update(title=proposal.get("title") or "", content=proposal.get("content") or "",
                   memory_class=proposal.get("memory_class"), anchor=proposal.get("anchor"),
                   confidence=proposal.get("confidence"), turns=proposal.get("turns") or [])
    return found


def waiting(conn: apsw.Connection, *, ceiling: str, boundaries) -> int:
    """How many proposals wait for review (what the page header counts)."""
    where, params = permitted_sql("c", ceiling, boundaries)
    return conn.execute(f"SELECT COUNT(*) FROM memory_checkpoints c WHERE c.status='review' AND {where}",
                        params).fetchall()[0][0]


def keep(conn: apsw.Connection, checkpoint_id: str, now: int, *, title: str | None = None,
         content: str | None = None, ceiling: str = "personal", boundaries=None) -> dict:
    """Send a proposal on to curation, edited first when `title` or `content` is given."""
    row = _in_review(conn, checkpoint_id, ceiling, boundaries)
    payload = json.loads(row["payload_json"])
    proposal = dict(payload["proposal"])
    edited = False
    if content is not None and (title is None or title.strip() == proposal.get("title", "")):
        # the text was edited under its own opening as the title: the title follows the new text
        title = title_follows(proposal.get("title", ""), proposal.get("content", ""), content.strip())
    if title is not None and title.strip() != proposal.get("title", ""):
        proposal["title"] = clean_text(title, "the title", limit=MAX_TITLE_CHARS, required=False)
        edited = True
    if content is not None and content.strip() != proposal.get("content", ""):
        proposal["content"] = clean_text(content, "the text", limit=MAX_BODY_CHARS)
        edited = True
    refuse_secrets("this proposal", proposal.get("title"), proposal.get("content"))
    proposal["explicit"] = True  # a person vouched for it: never dropped for low confidence
    payload.update(proposal=proposal, reviewed={"by": "person", "edited": edited, "at": now})
    conn.execute("UPDATE memory_checkpoints SET status='pending', payload_json=?, available_at=?, updated_at=?"
                 " WHERE checkpoint_id=?", (json.dumps(payload, sort_keys=True), now, now, checkpoint_id))
    record_event(conn, checkpoint_id=checkpoint_id, session_id=row["session_id"], action="kept",
                 reason="kept in review after an edit" if edited else "kept in review", now=now,
                 decided_by="person")
    return {"checkpoint_id": checkpoint_id, "edited": edited}


def reject(conn: apsw.Connection, checkpoint_id: str, now: int, *, ceiling: str = "personal",
           boundaries=None) -> str:
    """Discard a proposal and tombstone its claim in its audience and boundary; the tombstone's id."""
    row = _in_review(conn, checkpoint_id, ceiling, boundaries)
    content = (json.loads(row["payload_json"]).get("proposal") or {}).get("content") or ""
    conn.execute("UPDATE memory_checkpoints SET status='discarded', updated_at=?, completed_at=?"
                 " WHERE checkpoint_id=?", (now, now, checkpoint_id))
    tombstone_id = new_id("tomb")
    conn.execute("INSERT INTO tombstones(tombstone_id, fingerprint, audience, boundary, memory_id, reason, source,"
                 " created_at) VALUES (?,?,?,?,?,?,?,?)",
                 (tombstone_id, fingerprint(content), row["audience"], row["boundary"], checkpoint_id,
                  "rejected in review", "review", now))
    store.add_tombstone_fingerprints(conn, tombstone_id, set(claim_fingerprints(content)) - {fingerprint(content)})
    record_event(conn, checkpoint_id=checkpoint_id, session_id=row["session_id"], action="rejected",
                 reason="rejected in review: the same claim will not be proposed again", now=now,
                 decided_by="person")
    return tombstone_id


def back_to_review(conn: apsw.Connection, checkpoint_id: str, now: int) -> None:
    """A rejected proposal whose tombstone a person lifted waits for review again."""
    conn.execute("UPDATE memory_checkpoints SET status='review', completed_at=NULL, updated_at=?"
                 " WHERE checkpoint_id=? AND status='discarded'", (now, checkpoint_id))


__all__ = ["OBSERVED", "back_to_review", "keep", "queue", "reject", "waiting", "waits_for_review"]
