"""A person's corrections: revert to a revision, restore what was deleted, narrow an audience.

Write functions (conn first, run on the writer thread, never commit). None of them rewrites
history: a revert is a new revision; a restore lifts the tombstone (its row stays, with when it
was lifted) and brings the memory back (a document undeleted, a record re-appended after its
tombstone); narrowing moves a memory, and the graph it asserted, to a more private audience.
"""

from __future__ import annotations

import re

import apsw

from .db import one, rows, scalar
from .edit import follow_edges
from .errors import InvalidInput, NotFound, ScopeError
from .filing import follow_anchor, retire_if_empty
from .policy import PRIVACY_RANK, Scope, permitted_sql
from .store import (
    delete_memory,
    load_visible,
    record_chain,
    remember_in_receipts,
    revise_document,
    supersede_record,
    upsert_anchor,
)
from .writepath.entities import EXCLUSIVE


def revert(conn: apsw.Connection, scope: Scope, memory_id: str, revision: int, now: int, *,
           source: str = "ui") -> int:
    """Make the body and title of `revision` the document's newest revision; returns its number."""
    row = load_visible(conn, scope, memory_id, now)
    if row["kind"] != "document":
        raise InvalidInput("only living documents have revisions; a record is corrected by superseding it")
    old = one(conn, "SELECT title, body FROM memory_revisions WHERE document_id=? AND revision=?",
              (row["document_id"], revision))
    if old is None:
        raise NotFound(f"{memory_id} has no revision {revision}")
    if revision == row["revision"]:
        raise InvalidInput(f"revision {revision} is already the current one")
    number = revise_document(conn, row, old["title"], old["body"], now, source=source,
                             reason=f"revert to {revision}")
    row = follow_anchor(conn, row, row["id"], old["body"], now)  # the graph goes back with the text
    follow_edges(conn, row, row["id"], old["body"], now)
    return number


def tombstone_row(conn: apsw.Connection, tombstone_id: str, ceiling: str,
                  boundaries: tuple[str, ...] | None) -> dict:
    """A tombstone the caller's permission covers and that still stands (NotFound otherwise)."""
    where, params = permitted_sql("t", ceiling, boundaries)
    found = one(conn, f"SELECT t.* FROM tombstones t WHERE t.tombstone_id=? AND t.lifted_at IS NULL AND {where}",
                (tombstone_id, *params))
    if found is None:
        raise NotFound("no such deletion to undo: it was restored already, or it is not yours to see")
    return found


def restore(conn: apsw.Connection, tombstone_id: str, now: int, *, ceiling: str,
            boundaries: tuple[str, ...] | None, source: str = "ui") -> str:
    """Lift a tombstone and bring its memory back; returns the id that now holds it."""
    tomb = tombstone_row(conn, tombstone_id, ceiling, boundaries)
    memory_id = tomb["memory_id"]
    restored = memory_id
    if memory_id and memory_id.startswith("doc-"):
        conn.execute("UPDATE memory_documents SET deleted_at=NULL, deactivated_reason=NULL,"
                     " update_semantics='merge-document', updated_at=? WHERE document_id=? AND deleted_at IS NOT NULL",
                     (now, memory_id))
    elif memory_id and memory_id.startswith("cp-"):  # a proposal rejected in review: it waits again
        conn.execute("UPDATE memory_checkpoints SET status='review', completed_at=NULL, updated_at=?"
                     " WHERE checkpoint_id=? AND status='discarded'", (now, memory_id))
    elif memory_id and memory_id.startswith("rec-"):
        original = one(conn, "SELECT * FROM memory_records WHERE record_id=?", (memory_id,))
        head = one(conn, "SELECT * FROM memory_records WHERE supersedes_record_id=?", (memory_id,))
        if original is not None and head is not None and head["is_tombstone"]:
            restored = supersede_record(conn, head, original["title"], original["body"], now, source=source)
    if memory_id:
        _reopen_edges(conn, memory_id, tomb["created_at"])
        _named_again(conn, memory_id, restored)
    conn.execute("UPDATE tombstones SET lifted_at=? WHERE tombstone_id=?", (now, tombstone_id))
    return restored


def _named_again(conn: apsw.Connection, memory_id: str, restored: str) -> None:
    """The receipts the deletion blanked name the restored memory again (store.remember_in_receipts)."""
    if memory_id.startswith("doc-"):
        row = one(conn, "SELECT title, body FROM memory_documents WHERE document_id=?", (restored,))
        ids = [memory_id]
    elif memory_id.startswith("rec-"):
        row = one(conn, "SELECT title, body FROM memory_records WHERE record_id=?", (restored,))
        ids = record_chain(conn, memory_id)
    else:
        return
    if row is not None:
        remember_in_receipts(conn, ids, row["title"], row["body"])


def _reopen_edges(conn: apsw.Connection, memory_id: str, deleted_at: int) -> None:
    """The edges the deletion closed (asserted by the memory, closed at the tombstone's moment) hold
    again, unless something said since holds in their place (the same relation from the same anchor
    to another target). Another memory that said the same tie meanwhile does not take its place: both
    hold it (graph.edges shows it once, since the first), so it neither reads as ended at the
    restore nor goes when that other memory is erased (a walk saw both)."""
    for edge in rows(conn, "SELECT edge_id, from_anchor_id, relation, to_anchor_id FROM memory_edges"
                           " WHERE asserted_by=? AND valid_to=?", (memory_id, deleted_at)):
        taken = edge["relation"] in EXCLUSIVE and one(
            conn, "SELECT 1 AS x FROM memory_edges WHERE from_anchor_id=? AND relation=? AND to_anchor_id!=?"
                  " AND valid_to IS NULL", (edge["from_anchor_id"], edge["relation"], edge["to_anchor_id"]))
        if not taken:  # a tie of several values (a second pet, a sister) takes no other's place
            conn.execute("UPDATE memory_edges SET valid_to=NULL WHERE edge_id=?", (edge["edge_id"],))


def deleted_page(conn: apsw.Connection, *, ceiling: str, boundaries: tuple[str, ...] | None,
                 cursor: tuple[int, str] | None = None, limit: int = 50) -> list[dict]:
    """Tombstones still standing, newest first (keyset on created_at and id), with what was deleted."""
    where, params = permitted_sql("t", ceiling, boundaries)
    if cursor is not None:
        where += " AND (t.created_at, t.tombstone_id) < (?, ?)"
        params += [cursor[0], cursor[1]]
    return rows(
        conn,
        "SELECT t.tombstone_id, t.memory_id, t.audience, t.boundary, t.reason, t.source, t.created_at,"
        " COALESCE(d.title, r.title, json_extract(c.payload_json, '$.proposal.title')) AS title,"
        " COALESCE(d.body, r.body, json_extract(c.payload_json, '$.proposal.content')) AS body,"
        " COALESCE(d.memory_class, r.memory_class, json_extract(c.payload_json, '$.proposal.memory_class'))"
        " AS memory_class FROM tombstones t"
        " LEFT JOIN memory_documents d ON d.document_id = t.memory_id"
        " LEFT JOIN memory_records r ON r.record_id = t.memory_id"
        " LEFT JOIN memory_checkpoints c ON c.checkpoint_id = t.memory_id"
        f" WHERE t.lifted_at IS NULL AND {where} ORDER BY t.created_at DESC, t.tombstone_id DESC LIMIT ?",
        (*params, max(1, min(int(limit), 200))))


def narrow_audience(conn: apsw.Connection, scope: Scope, memory_id: str, audience: str, now: int) -> str:
    """Move a memory to a more private audience, with the anchor and edges it asserted.

    The memory moves to the anchor of the same name in the new audience (made if needed), and
    the edges it asserted move with it, so the wider audience no longer sees them; an anchor left
    with no memory and no edge in the old audience is retired.
    """
    row = load_visible(conn, scope, memory_id, now)
    if audience not in PRIVACY_RANK or audience == "public":
        raise InvalidInput("choose personal or team")
    if PRIVACY_RANK[audience] < PRIVACY_RANK[row["audience"]]:
        raise ScopeError(f"a {row['audience']} memory can only be narrowed, never widened to {audience}")
    if audience == row["audience"]:
        return row["id"]
    key, table = ("document_id", "memory_documents") if row["kind"] == "document" else ("record_id", "memory_records")
    old_anchor = row["anchor_id"]
    new_anchor = _anchor_in(conn, old_anchor, audience, now) if old_anchor else None
    conn.execute(f"UPDATE {table} SET audience=?, anchor_id=? WHERE {key}=?", (audience, new_anchor, row[key]))
    for edge in rows(conn, "SELECT * FROM memory_edges WHERE asserted_by=?", (row[key],)):
        conn.execute("UPDATE memory_edges SET audience=?, from_anchor_id=?, to_anchor_id=? WHERE edge_id=?",
                     (audience, _anchor_in(conn, edge["from_anchor_id"], audience, now),
                      _anchor_in(conn, edge["to_anchor_id"], audience, now), edge["edge_id"]))
        for end in (edge["from_anchor_id"], edge["to_anchor_id"]):
            retire_if_empty(conn, end)
    if old_anchor:
        retire_if_empty(conn, old_anchor)
    return row["id"]


def _anchor_in(conn, anchor_id: str, audience: str, now: int) -> str:
    """The anchor with this one's name in `audience` (the same boundary), made if needed."""
    a = one(conn, "SELECT * FROM memory_anchors WHERE anchor_id=?", (anchor_id,))
    if a is None or a["audience"] == audience:
        return anchor_id
    return upsert_anchor(conn, a["canonical_name"], a["anchor_type"], audience, a["boundary"], now)


__all__ = ["deleted_page", "narrow_audience", "restore", "revert"]


def merge_duplicate(conn: apsw.Connection, scope: Scope, memory_id: str, into_id: str, now: int, *,
                    source: str = "ui") -> dict:
    """Fold a memory that says what another says into that living document, as a person asks: the
    duplicate is deleted without a tombstone (its fact is not wrong: it stays said, and may be
    learnt again), and whatever of its text the document does not already say is appended to it,
    so no fact is lost. The edges it asserted are the document's now. Deleting it as wrong, the
    only way before, tombstoned the true fact in both wordings. Returns {kept, appended, revision}."""
    from .writepath.mergeguard import contains_statement

    row, into = load_visible(conn, scope, memory_id, now), load_visible(conn, scope, into_id, now)
    if row["id"] == into["id"]:
        raise InvalidInput("choose another memory to merge it into: a memory cannot merge into itself")
    if into["kind"] != "document":
        raise InvalidInput(f"{into['title']!r} is a record, which is never changed: merge into a living document")
    if (row["audience"], row["boundary"]) != (into["audience"], into["boundary"]):
        raise InvalidInput(f"{row['title']!r} ({row['audience']}, {row['boundary']}) and {into['title']!r} "
                           f"({into['audience']}, {into['boundary']}) are in different audiences or boundaries: "
                           "only memories in the same one can be merged")
    appended = not contains_statement(into["body"], row["body"])
    body = f"{into['body'].rstrip()}\n\n{row['body'].strip()}" if appended else into["body"]
    revision = revise_document(conn, into, into["title"], body, now, source=source,
                               reason=f"merged {row['id']}") if appended else into["revision"]
    conn.execute("UPDATE memory_edges SET asserted_by=? WHERE asserted_by=?", (into["id"], row["id"]))
    delete_memory(conn, row, now, reason=MERGED_REASON.format(into["id"]), source=source, as_wrong=False)
    return {"kept": into["id"], "appended": appended, "revision": revision}


MERGED_REASON = "merged into {} as a duplicate"
_MERGED_RE = re.compile(r"merged into ((?:doc|rec)-[0-9a-f]{32}) as a duplicate")


def duplicate_merged_into(conn: apsw.Connection, scope: Scope, memory_id: str, now: int) -> dict | None:
    """Where a memory merged as a duplicate (merge_duplicate) went: {"into": the living memory,
    followed on when that one was merged in turn, "title", "body": what the duplicate said}; None
    when it was not merged, or the memory it went into is not visible to `scope` (a narrower session
    must not learn of a memory beyond it). A merged record is found by the revision its text added."""
    from .search import get_one

    said = one(conn, "SELECT title, body FROM memory_documents WHERE document_id=? AND deleted_at IS NOT NULL",
               (memory_id,)) or one(conn, "SELECT title, body FROM memory_records WHERE record_id=? AND is_tombstone=0",
                                    (memory_id,))
    if said is None:
        return None
    seen, at = {memory_id}, memory_id
    while True:
        reason = scalar(conn, "SELECT deactivated_reason FROM memory_documents WHERE document_id=? AND"
                              " deleted_at IS NOT NULL", (at,)) or ""
        found = _MERGED_RE.fullmatch(reason)
        following = found.group(1) if found else scalar(
            conn, "SELECT document_id FROM memory_revisions WHERE reason=? ORDER BY revision LIMIT 1",
            (f"merged {at}",))
        if following is None or following in seen:
            break
        seen.add(following)
        at = following
    if at == memory_id:
        return None
    try:
        return {"into": get_one(conn, scope, at, now), "title": said["title"], "body": said["body"]}
    except NotFound:
        return None
