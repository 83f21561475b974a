"""Changing a memory in place: find-and-replace, rewrite, retitle, supersede (records) or delete.

`update_mode` checks which change the arguments ask for; `apply_update` runs on the writer
thread. A living document gets a new revision (history is never rewritten); a record gets a
superseding record; a delete leaves a tombstone so the same claim is not learnt again.
"""

from __future__ import annotations

from . import graph_edit, store
from .db import one, rows, scalar
from .errors import InvalidInput, ScopeError
from .filing import follow_anchor
from .filing import says_name as _names
from .memory import MAX_BODY_CHARS, aliases_after, clean_text, title_follows
from .policy import PRIVACY_RANK, Scope
from .results import UpdateResult
from .stance import current_part


def update_mode(old_text, new_text, new_content, title, delete) -> str:
    if delete:
        if any(v is not None for v in (old_text, new_text, new_content)):
            raise InvalidInput("delete cannot be combined with old_text, new_text or new_content")
        return "delete"
    if new_content is not None:
        if old_text is not None or new_text is not None:
            raise InvalidInput("use either new_content (full rewrite) or old_text + new_text, not both")
        if not isinstance(new_content, str) or not new_content.strip():
            raise InvalidInput("new_content is empty: to remove a memory, use delete")
        return "rewrite"
    if old_text is not None or new_text is not None:
        if old_text is None:
            raise InvalidInput("old_text is missing: give the exact text to replace, with new_text")
        if not isinstance(old_text, str) or not old_text:
            raise InvalidInput("old_text is empty: give the exact text to replace")
        if not isinstance(new_text, str):
            raise InvalidInput("new_text is missing: give the replacement text (it may be empty)")
        return "replace"
    if title is not None:
        return "retitle"
    raise InvalidInput("nothing to update: give new_content, old_text and new_text, title, or delete")


def apply_update(conn, scope: Scope, memory_id: str, mode: str, old_text, new_text, new_content,
                  title, reason: str, source: str, now: int) -> UpdateResult:
    row = store.load_visible(conn, scope, memory_id, now)
    if scope.session_id and row["boundary"] != scope.boundary:
        # A cross-boundary grant (policy.cross_boundary_reads) lets a session read another boundary's
        # memories, never change them: writes may narrow a scope, never widen it
        raise ScopeError(f"this memory is in boundary {row['boundary']!r}, which a {scope.boundary!r} session may "
                         f"only read: correct or delete it from a {row['boundary']!r} session, or in the browser")
    if mode != "delete" and scope.session_id and PRIVACY_RANK[scope.audience] > PRIVACY_RANK[row["audience"]]:
        # A personal session reads its boundary's team memories, but its words are its own: written
        # into a team memory they would reach every teammate (writes may narrow, never widen)
        raise ScopeError(f"this is a {row['audience']} memory and this session is {scope.audience}: its words "
                         f"would reach every {row['audience']} reader. Correct it from a {row['audience']} "
                         "session, or in the browser")
    if mode == "delete":
        store.delete_memory(conn, row, now, reason=reason, source=source)
        return UpdateResult(row["id"], "deleted", reason=(
            "deleted as wrong: it is not recalled or learnt again (a person can restore it, or erase it for "
            "good, under Deleted)"))
    new_title = title if title is not None else row["title"]
    if mode == "replace":
        count = row["body"].count(old_text)
        if count == 0:
            raise InvalidInput("old_text was not found in the memory: copy it exactly (case matters)")
        body = row["body"].replace(old_text, new_text)
    elif mode == "rewrite":
        count, body = 0, new_content
    else:
        count, body = 0, row["body"]
    # The text is checked before a title is made from it: a NUL in the new text is the text's fault,
    # not the title's that follows it (revise_document checks the title first)
    body = clean_text(body, "content", limit=MAX_BODY_CHARS)
    if title is None and mode == "replace" and old_text in row["title"]:
        new_title = row["title"].replace(old_text, new_text)  # the title says the same fact: it changes with it
    elif title is None and mode in ("replace", "rewrite"):
        new_title = title_follows(row["title"], row["body"], body)
    if body == row["body"] and new_title == row["title"]:  # "peanuts" for "peanuts": no new revision
        return UpdateResult(row["id"], "unchanged", replacements=count, revision=row.get("revision"),
                            reason="the new text is the text it already has: nothing was changed")
    if mode == "replace" and new_text.strip():
        _follow_topic_name(conn, scope, row, old_text, new_text, now)
    aliases = aliases_after(row.get("aliases") or "", f"{row['title']}\n{row['body']}", f"{new_title}\n{body}")
    if row["kind"] == "document":
        revision = store.revise_document(conn, row, new_title, body, now, source=source, reason=mode,
                                         aliases=aliases)
        row = follow_anchor(conn, row, row["id"], body, now)
        follow_edges(conn, row, row["id"], body, now)
        action = {"replace": "replaced", "rewrite": "rewritten", "retitle": "retitled"}[mode]
        said = f"replaced {count} occurrence{'' if count == 1 else 's'}" if mode == "replace" else action
        return UpdateResult(row["id"], action, replacements=count, revision=revision,
                            reason=f"{said}: revision {revision} (the earlier text stays in its history)")
    new = store.supersede_record(conn, {**row, "aliases": aliases}, new_title, body, now, source=source)
    follow_edges(conn, follow_anchor(conn, row, new, body, now), new, body, now)
    return UpdateResult(row["id"], "superseded", new_id=new, replacements=count,
                        reason=f"a record is never changed in place: {new} supersedes it (use that id from now on)")


def _follow_topic_name(conn, scope: Scope, row: dict, old_text: str, new_text: str, now: int) -> None:
    """A topic anchor named by the words of its one memory ("User's habit: cello Tuesdays") is
    renamed with the correction ("…cello Thursdays"), its old name kept as an alias; otherwise a
    list row would contradict its own text. Anchors of people, places, or of several memories keep
    their names (a person renames them on the anchor's page)."""
    if not row.get("anchor_id"):
        return
    anchor = one(conn, "SELECT anchor_id, canonical_name FROM memory_anchors WHERE anchor_id=? AND"
                       " anchor_type='topic'", (row["anchor_id"],))
    if anchor is None or old_text not in anchor["canonical_name"]:
        return
    others = scalar(conn, "SELECT (SELECT COUNT(*) FROM memory_documents WHERE anchor_id=? AND deleted_at IS NULL"
                          " AND document_id != ?) + (SELECT COUNT(*) FROM memory_records WHERE anchor_id=?"
                          " AND record_id != ?)", (anchor["anchor_id"], row["id"], anchor["anchor_id"], row["id"]))
    if others:
        return
    try:
        graph_edit.rename(conn, scope, anchor["anchor_id"], anchor["canonical_name"].replace(old_text, new_text), now)
    except InvalidInput:
        pass  # the new name is another anchor's: the correction stands, the name waits for a person


def follow_edges(conn, row: dict, memory_id: str, body: str, now: int) -> None:
    """The graph says what the corrected text says. An open edge the memory asserted holds on only
    while the new text still names its target (by its name or an alias): corrected from "lives in
    Trondheim" to "lives in Bergen", the Trondheim edge is retired as never so (closed where it
    began: a correction is no move, so no "as of" view says Anna lived there; Edge.corrected), and
    "I have no debts." retires the landlord. The people and places the new text names are asserted
    as store_memory asserts them (an exclusive relation closes the old value), by `memory_id`: a
    superseding record takes over the edges its predecessor asserted, so deleting it closes them.

    Asserted by an LLM or by hand, an edge needs no cue phrase in the text, only its target's
    name: "Anna, my sister, lives in Lisbon" rewritten to "Anna moved to Lisbon last year" keeps
    the sister edge."""
    from .writepath import extractor  # the write path's cue phrases, as a memory is first learnt
    from .writepath.curation import store_relations

    reopened: dict[str, int] = {}  # edge id -> when it had ended, for each _undisplace gave back
    retired: list[dict] = []  # the edges this correction found never so
    for edge in rows(conn, "SELECT e.edge_id, e.from_anchor_id, e.relation, e.to_anchor_id, e.valid_from"
                           " FROM memory_edges e WHERE e.asserted_by=? AND e.valid_to IS NULL", (row["id"],)):
        if _says_target(conn, body, edge["to_anchor_id"]):
            conn.execute("UPDATE memory_edges SET asserted_by=? WHERE edge_id=?", (memory_id, edge["edge_id"]))
        else:  # it was never so: its interval closes where it began ("as of" any day it never held)
            conn.execute("UPDATE memory_edges SET valid_to=valid_from WHERE edge_id=?", (edge["edge_id"],))
            retired.append(edge)
            if (back := _undisplace(conn, edge, body)) is not None:
                reopened[back] = edge["valid_from"]
    _uncorrect(conn, row["id"], memory_id, body, {e["edge_id"] for e in retired})
    # what the text says now: re-read whole, an agent's spelling fix of a document whose earlier
    # part says "Anna lives in Porto" asserted Porto again and closed the newer Madrid (a walk)
    relations = store_relations(extractor.ties_of(current_part(body))[0])
    store.assert_relations(conn, row.get("anchor_id"), relations, audience=row["audience"],
                           boundary=row["boundary"], asserted_by=memory_id, now=now,
                           confidence=row.get("confidence") or 0.8)
    for edge_id, ended in reopened.items():
        # the new text names a new value too (the move's target corrected, Porto to Braga): the old
        # home ended when the move was said, not at this correction
        conn.execute("UPDATE memory_edges SET valid_to=? WHERE edge_id=? AND valid_to=?", (ended, edge_id, now))
    for edge in retired:
        # the value that takes a never-so one's place held from when that one was said (Porto
        # corrected to Madrid: Anna moved then, to Madrid), so the old home reads "replaced by Madrid"
        conn.execute("UPDATE memory_edges SET valid_from=? WHERE asserted_by=? AND from_anchor_id=? AND relation=?"
                     " AND valid_from=? AND created_at=? AND valid_to IS NULL",
                     (edge["valid_from"], memory_id, edge["from_anchor_id"], edge["relation"], now, now))


def _says_target(conn, body: str, anchor_id: str) -> bool:
    """Does `body` name the anchor (by its name or an alias)?"""
    names = [n for (n,) in conn.execute("SELECT canonical_name FROM memory_anchors WHERE anchor_id=? UNION"
                                        " SELECT alias FROM anchor_aliases WHERE anchor_id=?", (anchor_id,) * 2)]
    return any(_names(body, name) for name in names)


def _uncorrect(conn, asserted_by: str, memory_id: str, body: str, just_retired: set[str]) -> None:
    """An edge the memory once said, that a correction found never so, holds again when the text
    says it again (a revert): the same edge, from when it was first said, not a second one beside
    the first marked "never so" (a walk saw "lives in Porto" both current and corrected)."""
    for edge in rows(conn, "SELECT edge_id, from_anchor_id, relation, to_anchor_id FROM memory_edges"
                           " WHERE asserted_by=? AND valid_to IS NOT NULL AND valid_to=valid_from", (asserted_by,)):
        if edge["edge_id"] in just_retired or not _says_target(conn, body, edge["to_anchor_id"]):
            continue
        if one(conn, "SELECT 1 AS x FROM memory_edges WHERE from_anchor_id=? AND relation=? AND to_anchor_id=?"
                     " AND valid_to IS NULL", (edge["from_anchor_id"], edge["relation"], edge["to_anchor_id"])):
            continue
        conn.execute("UPDATE memory_edges SET valid_to=NULL, asserted_by=? WHERE edge_id=?",
                     (memory_id, edge["edge_id"]))


def _undisplace(conn, edge: dict, body: str) -> str | None:
    """An edge retired as never so gives its place back: the value it closed when it was asserted
    (same anchor and relation, closed at the moment it began) holds on, unbroken, when the new text
    still says it and nothing else holds there now. Reverted from "Anna moved to Porto." to "...lives
    in Lisbon.", Anna's page had said both "Corrected, never so: lives in Porto" and "Previously
    lives in Lisbon, until today; replaced by Porto", beside a Lisbon edge asserted anew."""
    if one(conn, "SELECT 1 AS x FROM memory_edges WHERE from_anchor_id=? AND relation=? AND valid_to IS NULL",
           (edge["from_anchor_id"], edge["relation"])) is not None:
        return None
    displaced = one(conn, "SELECT edge_id, to_anchor_id FROM memory_edges WHERE from_anchor_id=? AND relation=?"
                          " AND valid_to=? AND edge_id != ? AND valid_from < valid_to ORDER BY created_at DESC LIMIT 1",
                    (edge["from_anchor_id"], edge["relation"], edge["valid_from"], edge["edge_id"]))
    if displaced is not None and _says_target(conn, body, displaced["to_anchor_id"]):
        conn.execute("UPDATE memory_edges SET valid_to=NULL WHERE edge_id=?", (displaced["edge_id"],))
        return displaced["edge_id"]
    return None


