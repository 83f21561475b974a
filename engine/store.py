"""Write functions for memories, anchors and edges.

Every function here takes the writer's connection first, runs inside the caller's transaction
and never commits. `insert_memory` is the one way a memory is created: explicit tools, imports
and the curation worker all call it, so the write path has no second door. It, `revise_document`
and `supersede_record` apply the secret rule (SecretBlocked) to the text they write.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import apsw

from .bearing import bears_on
from .db import one, rows, scalar
from .errors import InvalidInput, NotFound, ScopeError
from .memory import (
    MAX_BODY_CHARS,
    MAX_TITLE_CHARS,
    RECALL_MODES,
    SOURCES,
    Provenance,
    claim_fingerprints,
    clean_terms,
    clean_text,
    content_hash,
    default_recall_mode,
    doc_columns,
    expires_for,
    fingerprint,
    kind_for_class,
    new_id,
    normalize_text,
    parse_id,
    rec_columns,
    terms_text,
)
from .policy import AUDIENCES, Scope, check_name, visible_sql
from .secretfilter import json_strings, refuse_secrets


@dataclass(frozen=True)
class Relation:
    relation: str
    target: str  # the target anchor's name
    target_type: str = "concept"
    exclusive: bool = True
    source: str | None = None  # the source anchor's name (None: the memory's own anchor)
    source_type: str = "concept"


@dataclass(frozen=True)
class MemoryDraft:
    """Everything needed to create one memory; validated by `validate_draft`."""

    title: str
    body: str
    memory_class: str
    audience: str
    boundary: str
    author_audience: str
    source: str
    session_id: str | None = None
    provenance: Provenance = field(default_factory=Provenance)
    authored_at: int | None = None
    aliases: tuple[str, ...] = ()
    facets: tuple[str, ...] = ()
    anchor: str | None = None
    anchor_type: str = "concept"
    relations: tuple[Relation, ...] = ()
    confidence: float = 0.8
    sensitivity: str = "normal"
    recall_mode: str | None = None
    update_semantics: str | None = None


def validate_draft(draft: MemoryDraft) -> MemoryDraft:
    """Check and normalize a draft; raise InvalidInput with what to fix."""
    kind_for_class(draft.memory_class)
    title = clean_text(draft.title, "title", limit=MAX_TITLE_CHARS, required=False)
    body = clean_text(draft.body, "content", limit=MAX_BODY_CHARS)
    # An anchor's name is held to a title's length (what an export carries and an import accepts).
    anchor = clean_text(draft.anchor, "anchor", limit=MAX_TITLE_CHARS, required=False) or None
    if not title:
        first = body.splitlines()[0]
        title = first[:72].rstrip()
    for what, aud in (("audience", draft.audience), ("author audience", draft.author_audience)):
        if aud not in AUDIENCES:
            raise InvalidInput(f"unknown {what} {aud!r}: use one of {', '.join(AUDIENCES)}")
    if draft.author_audience == "public" or draft.audience == "public":
        raise ScopeError("public sessions cannot write memory: open a personal or team session")
    boundary = check_name(draft.boundary)
    if draft.source not in SOURCES:
        raise InvalidInput(f"unknown source {draft.source!r}: use one of {', '.join(SOURCES)}")
    recall_mode = draft.recall_mode or default_recall_mode(draft.memory_class)
    if recall_mode not in RECALL_MODES:
        raise InvalidInput(f"unknown recall mode {recall_mode!r}: use one of {', '.join(RECALL_MODES)}")
    if draft.sensitivity not in ("normal", "secret"):
        raise InvalidInput("sensitivity must be 'normal' or 'secret'")
    try:
        confidence = min(1.0, max(0.0, float(draft.confidence)))
    except (TypeError, ValueError):
        raise InvalidInput("confidence must be a number between 0 and 1") from None
    return replace(
        draft,
        title=title,
        body=body,
        anchor=anchor,
        boundary=boundary,
        aliases=tuple(clean_terms(list(draft.aliases), "aliases")),
        facets=tuple(clean_terms(list(draft.facets), "facets")),
        recall_mode=recall_mode,
        confidence=confidence,
    )


def refuse_secret_draft(draft: MemoryDraft) -> None:
    """The secret rule over every text a draft would store (SecretBlocked names the kinds).

    The provenance is checked string by string, not as its JSON text: there a heading holding
    `os.environ["KEY"]` reads `os.environ[\\"KEY\\"]`, which no longer looks like code.
    """
    refuse_secrets("the memory", draft.title, draft.body, *draft.aliases, *draft.facets, draft.anchor,
                   *[part for r in draft.relations for part in (r.relation, r.target)],
                   *json_strings(draft.provenance.as_dict()))


def upsert_anchor(conn: apsw.Connection, name: str, anchor_type: str, audience: str,
                  boundary: str, now: int) -> str | None:
    """The anchor for `name` in this scope, created on first use; names dedupe when normalized."""
    normalized = normalize_text(name or "")
    if not normalized:
        return None
    # A former name (after a rename or a merge) files the mention under the anchor it became.
    alias = one(
        conn,
        "SELECT l.anchor_id FROM anchor_aliases l JOIN memory_anchors a ON a.anchor_id = l.anchor_id"
        " WHERE l.audience=? AND l.boundary=? AND l.normalized_name=? AND a.status='active'",
        (audience, boundary, normalized),
    )
    if alias:
        conn.execute("UPDATE memory_anchors SET updated_at=? WHERE anchor_id=?", (now, alias["anchor_id"]))
        return alias["anchor_id"]
    found = one(
        conn,
        "SELECT anchor_id, status FROM memory_anchors WHERE audience=? AND boundary=? AND normalized_name=?",
        (audience, boundary, normalized),
    )
    if found:
        conn.execute(
            "UPDATE memory_anchors SET updated_at=?, status='active' WHERE anchor_id=?",
            (now, found["anchor_id"]),
        )
        return found["anchor_id"]
    anchor_id = new_id("anc")
    conn.execute(
        "INSERT INTO memory_anchors(anchor_id, anchor_type, canonical_name, normalized_name, audience,"
        " boundary, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?)",
        (anchor_id, anchor_type or "concept", name.strip(), normalized, audience, boundary, now, now),
    )
    return anchor_id


def assert_edge(conn: apsw.Connection, from_anchor: str, relation: str, to_anchor: str, *,
                audience: str, boundary: str, asserted_by: str | None, now: int,
                confidence: float = 0.8, exclusive: bool = True) -> str:
    """Record that `from relation to` holds from now on.

    An assertion already open is kept (not duplicated). For an exclusive relation, an open edge
    from the same anchor with the same relation to another target has its interval closed: the
    old fact stays in the graph with the time it stopped being true.
    """
    relation = relation.strip().lower().replace(" ", "_")
    if not relation:
        raise InvalidInput("a relation needs a name, e.g. member_of or home_airport")
    open_same = one(
        conn,
        "SELECT edge_id FROM memory_edges WHERE from_anchor_id=? AND relation=? AND to_anchor_id=?"
        " AND valid_to IS NULL",
        (from_anchor, relation, to_anchor),
    )
    if open_same:
        return open_same["edge_id"]
    if exclusive:
        conn.execute(
            "UPDATE memory_edges SET valid_to=? WHERE from_anchor_id=? AND relation=?"
            " AND to_anchor_id != ? AND valid_to IS NULL",
            (now, from_anchor, relation, to_anchor),
        )
    edge_id = new_id("edge")
    conn.execute(
        "INSERT INTO memory_edges(edge_id, from_anchor_id, relation, to_anchor_id, audience, boundary,"
        " confidence, asserted_by, valid_from, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (edge_id, from_anchor, relation, to_anchor, audience, boundary, confidence, asserted_by, now, now),
    )
    return edge_id


def insert_memory(conn: apsw.Connection, draft: MemoryDraft, now: int) -> str:
    """Create a memory from a validated draft and return its id (doc-… or rec-…)."""
    draft = validate_draft(draft)
    refuse_secret_draft(draft)
    kind = kind_for_class(draft.memory_class)
    authored = draft.authored_at if draft.authored_at is not None else now
    anchor_id = upsert_anchor(conn, draft.anchor or "", draft.anchor_type, draft.audience,
                              draft.boundary, now) if draft.anchor else None
    common = dict(
        anchor_id=anchor_id,
        memory_class=draft.memory_class,
        title=draft.title,
        body=draft.body,
        aliases=terms_text(list(draft.aliases)),
        facets=terms_text(list(draft.facets)),
        audience=draft.audience,
        boundary=draft.boundary,
        author_audience=draft.author_audience,
        sensitivity=draft.sensitivity,
        recall_mode=draft.recall_mode,
        confidence=draft.confidence,
        source=draft.source,
        session_id=draft.session_id,
        provenance_json=draft.provenance.to_json(),
        authored_at=authored,
        created_at=now,
        freshness_at=now,
        expires_at=expires_for(draft.memory_class, now),
        content_hash=content_hash(draft.title, draft.body),
        fingerprint=fingerprint(draft.body),
    )
    if kind == "document":
        memory_id = new_id("doc")
        values = dict(document_id=memory_id, updated_at=now, revision=1,
                      update_semantics=draft.update_semantics or "merge-document", bears_on=bears_on(draft.body),
                      **common)
        _insert(conn, "memory_documents", values)
        _insert_revision(conn, memory_id, 1, draft.title, draft.body, draft.source, "created", now)
    else:
        memory_id = new_id("rec")
        semantics = draft.update_semantics or (
            "conversation_trace" if draft.memory_class == "trace" else "immutable-record")
        values = dict(record_id=memory_id, update_semantics=semantics, **common)
        _insert(conn, "memory_records", values)
    assert_relations(conn, anchor_id, draft.relations, audience=draft.audience, boundary=draft.boundary,
                     asserted_by=memory_id, now=now, confidence=draft.confidence)
    return memory_id


def assert_relations(conn: apsw.Connection, anchor_id: str | None, relations, *, audience: str, boundary: str,
                     asserted_by: str | None, now: int, confidence: float = 0.8) -> list[str]:
    """Assert each relation as an edge: from its own source anchor when it names one, else from
    `anchor_id` (a relation with neither is skipped). Returns the edge ids."""
    edges = []
    for rel in relations:
        source = (upsert_anchor(conn, rel.source, rel.source_type, audience, boundary, now) if rel.source
                  else anchor_id)
        target = upsert_anchor(conn, rel.target, rel.target_type, audience, boundary, now)
        if source and target and source != target:
            edges.append(assert_edge(conn, source, rel.relation, target, audience=audience, boundary=boundary,
                                     asserted_by=asserted_by, now=now, confidence=confidence,
                                     exclusive=rel.exclusive))
    return edges


def _insert(conn: apsw.Connection, table: str, values: dict) -> None:
    cols = ",".join(values)
    marks = ",".join("?" * len(values))
    conn.execute(f"INSERT INTO {table}({cols}) VALUES ({marks})", tuple(values.values()))


def _insert_revision(conn, doc_id, revision, title, body, source, reason, now) -> None:
    conn.execute(
        "INSERT INTO memory_revisions(document_id, revision, title, body, source, reason, created_at)"
        " VALUES (?,?,?,?,?,?,?)",
        (doc_id, revision, title, body, source, reason, now),
    )


# -- edits ------------------------------------------------------------------------------------


def load_visible(conn: apsw.Connection, scope: Scope, memory_id: str, now: int) -> dict:
    """The live row for an id this scope may see (records resolve to the newest of their chain)."""
    memory_id = parse_id(memory_id)
    if memory_id.startswith("doc-"):
        pred, params = visible_sql("m", scope, now, kind="document", include_expired=True,
                                   include_trace=True)
        row = one(conn, f"SELECT m.*, {doc_columns()} FROM memory_documents m"
                        f" WHERE m.document_id=? AND {pred}", (memory_id, *params))
    else:
        head = resolve_record_head(conn, memory_id)
        pred, params = visible_sql("m", scope, now, kind="record", include_expired=True,
                                   include_trace=True)
        row = one(conn, f"SELECT m.*, {rec_columns()} FROM memory_records m"
                        f" WHERE m.record_id=? AND {pred}", (head, *params)) if head else None
    if row is None:
        raise NotFound(f"no memory {memory_id} is visible to this session: check the id, or it was deleted")
    return row


def resolve_record_head(conn: apsw.Connection, record_id: str) -> str | None:
    """Follow the supersede chain forward to the newest record."""
    return scalar(
        conn,
        """
        WITH RECURSIVE chain(id, depth) AS (
            SELECT record_id, 0 FROM memory_records WHERE record_id = ?
            UNION ALL
            SELECT r.record_id, chain.depth + 1 FROM memory_records r
            JOIN chain ON r.supersedes_record_id = chain.id
        )
        SELECT id FROM chain ORDER BY depth DESC LIMIT 1
        """,
        (record_id,),
    )


def record_chain(conn: apsw.Connection, record_id: str) -> list[str]:
    """The record's id and every earlier record its chain superseded, newest first."""
    return [r[0] for r in conn.execute(
        "WITH RECURSIVE chain(id, older) AS (SELECT record_id, supersedes_record_id FROM memory_records"
        " WHERE record_id = ? UNION ALL SELECT r.record_id, r.supersedes_record_id FROM memory_records r"
        " JOIN chain ON r.record_id = chain.older) SELECT id FROM chain", (record_id,))]


def earlier_records(conn: apsw.Connection, record_id: str) -> list[dict]:
    """The records `record_id` superseded, newest first (a deletion's tombstone record left out)."""
    older = record_chain(conn, record_id)[1:]
    found = {r["record_id"]: r for r in rows(
        conn, "SELECT record_id AS id, record_id, title, body, created_at, source, is_tombstone FROM memory_records"
              " WHERE record_id IN (SELECT value FROM json_each(?))", (json.dumps(older),))}
    return [{k: found[i][k] for k in ("id", "title", "body", "created_at", "source")}
            for i in older if i in found and not found[i]["is_tombstone"]]


def revise_document(conn: apsw.Connection, row: dict, title: str, body: str, now: int, *,
                    source: str, reason: str, semantics: str | None = None, aliases: str | None = None) -> int:
    """Write a new revision of a living document; every earlier body stays in memory_revisions.
    `aliases` (stored form, memory.terms_text) replaces its search aliases when given."""
    title = clean_text(title, "title", limit=MAX_TITLE_CHARS)
    body = clean_text(body, "content", limit=MAX_BODY_CHARS)
    refuse_secrets("the new text", title, body)
    revision = row["revision"] + 1
    conn.execute(
        "UPDATE memory_documents SET title=?, body=?, revision=?, updated_at=?, freshness_at=?,"
        " expires_at=?, content_hash=?, fingerprint=?, update_semantics=COALESCE(?, update_semantics),"
        " aliases=COALESCE(?, aliases), bears_on=? WHERE document_id=?",
        (title, body, revision, now, now, expires_for(row["memory_class"], now),
         content_hash(title, body), fingerprint(body), semantics, aliases, bears_on(body), row["document_id"]),
    )
    _insert_revision(conn, row["document_id"], revision, title, body, source, reason, now)
    return revision


def supersede_record(conn: apsw.Connection, row: dict, title: str, body: str, now: int, *,
                     source: str, tombstone: bool = False) -> str:
    """Append a record that replaces `row` and links the chain; the old record is never changed."""
    title = clean_text(title, "title", limit=MAX_TITLE_CHARS)
    if not tombstone:
        body = clean_text(body, "content", limit=MAX_BODY_CHARS)
        refuse_secrets("the new text", title, body)
    new = new_id("rec")
    values = {k: row[k] for k in (
        "anchor_id", "memory_class", "aliases", "facets", "audience", "boundary", "author_audience",
        "sensitivity", "recall_mode", "confidence", "session_id", "provenance_json", "authored_at")}
    values.update(
        record_id=new, title=title, body=body, source=source,
        update_semantics="tombstone" if tombstone else "supersede-record",
        supersedes_record_id=row["record_id"], is_tombstone=1 if tombstone else 0,
        created_at=now, freshness_at=now, expires_at=expires_for(row["memory_class"], now),
        content_hash=content_hash(title, body), fingerprint=fingerprint(body),
    )
    _insert(conn, "memory_records", values)
    return new


def delete_memory(conn: apsw.Connection, row: dict, now: int, *, reason: str, source: str,
                  as_wrong: bool = True) -> None:
    """Delete a memory. Deleting it as wrong leaves a tombstone so curation will not re-create it."""
    if row["kind"] == "document":
        conn.execute(
            "UPDATE memory_documents SET deleted_at=?, deactivated_reason=?, update_semantics='tombstone'"
            " WHERE document_id=?",
            (now, reason, row["document_id"]),
        )
    else:
        supersede_record(conn, row, row["title"], json.dumps({"status": "tombstone"}), now,
                         source=source, tombstone=True)
    conn.execute("DELETE FROM memory_embeddings WHERE item_id=?", (row["id"],))
    if as_wrong:
        # What it said of people and places no longer holds either (its home airport was not SFO):
        # its open edges close with the tombstone, at the same moment, so a restore can reopen them.
        conn.execute("UPDATE memory_edges SET valid_to=? WHERE asserted_by=? AND valid_to IS NULL", (now, row["id"]))
        tombstone_id, own = new_id("tomb"), fingerprint(row["body"])
        conn.execute(
            "INSERT INTO tombstones(tombstone_id, fingerprint, audience, boundary, memory_id, reason,"
            " source, created_at) VALUES (?,?,?,?,?,?,?,?)",
            (tombstone_id, own, row["audience"], row["boundary"], row["id"], reason, source, now),
        )
        # It was wrong in every wording it had: "quokka", corrected to "wombat" and then deleted,
        # must not be learnt again as first said either.
        # ...and as the observer would write it of the user ("User's cat…" for "My cat…": claim_fingerprints)
        earlier = {fp for body in (row["body"], *wordings(conn, row["id"])) for fp in claim_fingerprints(body)} - {own}
        add_tombstone_fingerprints(conn, tombstone_id, earlier)
        forget_in_receipts(conn, row)


def wordings(conn: apsw.Connection, memory_id: str) -> list[str]:
    """Every body a memory had: a document's revisions, a record's chain (record_chain; the
    tombstones in it left out, they say nothing)."""
    if memory_id.startswith("doc-"):
        return [r[0] for r in conn.execute("SELECT body FROM memory_revisions WHERE document_id=?", (memory_id,))]
    ids = record_chain(conn, memory_id) if memory_id.startswith("rec-") else []
    if not ids:
        return []
    return [r[0] for r in conn.execute(f"SELECT body FROM memory_records WHERE is_tombstone=0"
                                       f" AND record_id IN ({','.join('?' * len(ids))})", ids)]


def add_tombstone_fingerprints(conn: apsw.Connection, tombstone_id: str, fingerprints) -> None:
    """Refuse these fingerprints too while the tombstone stands (hashes only: an erase keeps them)."""
    for found in sorted(set(fingerprints)):
        conn.execute("INSERT OR IGNORE INTO tombstone_fingerprints(tombstone_id, fingerprint) VALUES (?, ?)",
                     (tombstone_id, found))


DELETED_TITLE = "(deleted memory)"


def receipts_naming(conn: apsw.Connection, ids: list[str]) -> list[tuple[str, str]]:
    """(receipt id, receipt JSON) of each recall receipt that names one of `ids`, once (an id is
    unique text: a LIKE finds every receipt that names it)."""
    found: dict[str, str] = {}
    for memory_id in ids:
        for receipt_id, text in conn.execute("SELECT receipt_id, receipt_json FROM recall_events"
                                             " WHERE receipt_json LIKE ?", (f'%"{memory_id}"%',)):
            found.setdefault(receipt_id, text)
    return list(found.items())


def _rewrite_receipts(conn: apsw.Connection, ids: list[str], change) -> int:
    """`change(receipt)` applied to each receipt naming one of `ids`; those it changed are written.
    Returns how many."""
    changed = 0
    for receipt_id, text in receipts_naming(conn, ids):
        receipt = json.loads(text)
        change(receipt)
        new = json.dumps(receipt)
        if new != text:
            conn.execute("UPDATE recall_events SET receipt_json=? WHERE receipt_id=?", (new, receipt_id))
            changed += 1
    return changed


def forget_in_receipts(conn: apsw.Connection, row: dict) -> int:
    """A memory deleted as wrong leaves the recall receipts that held it: their copy of its text and
    title is blanked (the receipt still says a memory was injected, by id, and why), so a session's
    token cannot read it back for the receipts' 14 days. Returns the receipts changed."""
    ids = [row["id"]]
    if row["kind"] == "record":  # the earlier records of its chain said the same claim
        ids = record_chain(conn, row["id"]) or ids
    gone = set(ids)

    def blank(receipt: dict) -> None:
        for item in receipt.get("injected") or []:
            if item.get("id") in gone:
                item.update(title=DELETED_TITLE, content="", deleted=True)
        for item in receipt.get("considered") or []:
            if item.get("id") in gone:
                item.update(title=DELETED_TITLE, deleted=True)
    return _rewrite_receipts(conn, ids, blank)


def remember_in_receipts(conn: apsw.Connection, ids: list[str], title: str, body: str) -> int:
    """A restored memory is named again in the receipts its deletion blanked (forget_in_receipts):
    every item of `ids` marked deleted gets the memory's title and text as they stand now (a receipt
    said "(deleted memory)" of it for good, though it was back). Returns the receipts changed."""
    back = set(ids)

    def name(receipt: dict) -> None:
        for key in ("injected", "considered"):
            for item in receipt.get(key) or []:
                if item.get("id") in back and item.get("deleted"):
                    item.pop("deleted")
                    item["title"] = title
                    if key == "injected":
                        item["content"] = body
    return _rewrite_receipts(conn, ids, name)


def tombstone_of(conn: apsw.Connection, body: str, audience: str, boundary: str) -> dict | None:
    """The tombstone a person left when they deleted this claim (same normalized fingerprint as the
    memory's last wording or any earlier one, said by the user or about them: claim_fingerprints)
    in this scope, with the deleted memory's id (`memory_id`, None for an imported one without)
    and when it was erased for good (`erased_at`, None while its text is kept)."""
    # Runs on every curated proposal: SQLite answers the OR from both indexes (tombstones_fingerprint,
    # tombstone_fingerprints_fingerprint) and filters the few tombstones found by scope.
    return one(
        conn,
        "SELECT tombstone_id, memory_id, erased_at FROM tombstones WHERE (fingerprint IN (?1, ?2) OR tombstone_id IN"
        " (SELECT tombstone_id FROM tombstone_fingerprints WHERE fingerprint IN (?1, ?2)))"
        " AND boundary=?3 AND audience=?4 AND lifted_at IS NULL ORDER BY created_at DESC LIMIT 1",
        (*claim_fingerprints(body), boundary, audience),
    )


def is_tombstoned(conn: apsw.Connection, body: str, audience: str, boundary: str) -> bool:
    """True when a person deleted this claim (same normalized fingerprint) in this scope."""
    return tombstone_of(conn, body, audience, boundary) is not None


def find_fingerprint(conn: apsw.Connection, body: str, audience: str, boundary: str) -> str | None:
    """The id of a live memory in this scope whose fingerprint equals this body's, if any."""
    fp = fingerprint(body)
    found = scalar(
        conn,
        "SELECT document_id FROM memory_documents WHERE fingerprint=? AND audience=? AND boundary=?"
        " AND deleted_at IS NULL LIMIT 1",
        (fp, audience, boundary),
    )
    if found:
        return found
    return scalar(
        conn,
        "SELECT r.record_id FROM memory_records r WHERE r.fingerprint=? AND r.audience=? AND r.boundary=?"
        " AND r.is_tombstone=0 AND NOT EXISTS (SELECT 1 FROM memory_records s"
        " WHERE s.supersedes_record_id=r.record_id) LIMIT 1",
        (fp, audience, boundary),
    )


def insert_unless_known(conn: apsw.Connection, draft: MemoryDraft, now: int) -> tuple[str | None, str]:
    """`insert_memory` for a memory written by hand, unless a person deleted the same claim as wrong
    in this scope (None, "tombstoned") or a live memory there says it word for word (its id,
    "duplicate"); else (the new id, "created")."""
    draft = validate_draft(draft)
    if is_tombstoned(conn, draft.body, draft.audience, draft.boundary):
        return None, "tombstoned"
    found = find_fingerprint(conn, draft.body, draft.audience, draft.boundary)
    if found:
        return found, "duplicate"
    return insert_memory(conn, draft, now), "created"


def revisions(conn: apsw.Connection, doc_id: str) -> list[dict]:
    return rows(conn, "SELECT revision, title, body, source, reason, created_at FROM memory_revisions"
                      " WHERE document_id=? ORDER BY revision DESC", (doc_id,))


def watermarks(conn: apsw.Connection) -> tuple[int, int]:
    """The highest rowids of the documents and records tables. Memories are never removed from
    them (a deletion marks a row), so a new memory always gets a higher rowid than these."""
    docs = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM memory_documents").fetchall()[0][0]
    recs = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM memory_records").fetchall()[0][0]
    return int(docs), int(recs)
