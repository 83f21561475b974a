"""Checking a JSON Lines import before anything is written, row by row, as the API checks input.

An export file is data from elsewhere: it gets the API's checks (id formats, the same size
limits, audiences and boundary names, the secret rule) field by field, with errors that name the
line. Rows may link only to rows of the same file: a record supersedes a record of the file, a
revision belongs to a document of the file, an edge joins anchors of the file, a tombstone names a
memory of the file or the proposal it rejected in review. Nothing already stored is ever changed: a
row stored as it is in the file is skipped (importing a file twice is a no-op); a row whose id is
stored with other content (its text, scope or class changed), and a row that would revise or
supersede a stored memory, are errors. The one link kept to the store is an anchor's name: an
imported anchor named like a stored one in the same scope becomes that anchor (anchors are names,
and their names are unique per scope).

An export of any store must import back, so a limit here is never tighter than what a store may
already hold (see STORED_NAME_CHARS).
"""

from __future__ import annotations

import json
import re
import unicodedata

import apsw

from .bearing import bears_on
from .db import one, rows
from .errors import EngineError, InvalidInput
from .memory import MAX_BODY_CHARS, MAX_TITLE_CHARS, RECALL_MODES, SOURCES, content_hash, fingerprint, normalize_text
from .policy import AUDIENCES, MEMORY_CLASSES, check_name
from .secretfilter import refuse_secrets
from .store import add_tombstone_fingerprints
from .writepath.checkpoints import TRIGGERS
from .writepath.entities import EXCLUSIVE

MAX_TERMS_CHARS = 10_000
MAX_SHORT_CHARS = 200
# Names in the graph (an anchor's name and type, an alias, a relation). New ones are held to a
# title's length when written (store.validate_draft), but stores made before that, and the names a
# curator LLM gives relation targets, hold longer ones: the import takes any name a memory's text
# could hold, so that an export of every existing store imports back.
STORED_NAME_CHARS = MAX_BODY_CHARS
# A rejected proposal's checkpoint payload: the proposal (text and title) with its provenance.
MAX_PAYLOAD_CHARS = 2 * MAX_BODY_CHARS


class RowError(Exception):
    """One field of one row is unusable (the message names the field)."""


class ImportRefused(InvalidInput):
    """The file has unusable rows: nothing was imported; `errors` name the lines."""

    def __init__(self, errors: list[str]):
        super().__init__(f"nothing was imported: {len(errors)} problem(s), first: {errors[0]}")
        self.errors = errors


# -- field checks ------------------------------------------------------------------------------


def ident(*prefixes: str):
    """An id of one of these kinds: `prefix-` then 32 hex digits."""
    pattern = re.compile(rf"^(?:{'|'.join(map(re.escape, prefixes))})-[0-9a-f]{{32}}$")
    shapes = [f"{p}-<32 hex digits>" for p in prefixes]
    said = shapes[0] if len(shapes) == 1 else f"{', '.join(shapes[:-1])} or {shapes[-1]}"

    def check(v):
        if not isinstance(v, str) or not pattern.match(v):
            raise RowError(f"must be an id like {said}")
        return v
    return check


def text(limit: int, *, required: bool = True):
    def check(v):
        if not isinstance(v, str):
            raise RowError("must be a string")
        if required and not v.strip():
            raise RowError("is empty")
        if "\x00" in v:  # no text Keepmind writes holds one (SQLite and every reader cut the text there)
            raise RowError("holds a NUL character (\\u0000)")
        if len(v) > limit:
            raise RowError(f"is {len(v)} characters; the limit is {limit}")
        return v
    return check


def whole(v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise RowError("must be a whole number")
    return v


def number01(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        raise RowError("must be a number from 0 to 1")
    return v


def one_of(values):
    def check(v):
        if v not in values:
            raise RowError(f"must be one of {', '.join(map(str, values))}")
        return v
    return check


def boundary(v):
    try:
        name = check_name(v)
    except InvalidInput as exc:  # the row error names the field: "boundary is not usable: the boundary holds…"
        raise RowError(f"is not usable: {exc.message}") from None
    if name != unicodedata.normalize("NFC", v):
        raise RowError("has spaces around it")
    return name  # in NFC, as every boundary is stored (an older export may spell it otherwise)


def json_object(v, limit: int = MAX_BODY_CHARS):
    if not isinstance(v, str) or len(v) > limit:
        raise RowError(f"must be a JSON object written as a string of at most {limit} characters")
    try:
        parsed = json.loads(v)
    except (ValueError, RecursionError):
        raise RowError("is not valid JSON") from None
    if not isinstance(parsed, dict):
        raise RowError("must be a JSON object")
    return v


def checkpoint_payload(v):
    return json_object(v, MAX_PAYLOAD_CHARS)


def hex64(v):
    if not isinstance(v, str) or not re.fullmatch(r"[0-9a-f]{64}", v):
        raise RowError("must be 64 hex digits")
    return v


def nullable(check):
    def maybe(v):
        return None if v is None else check(v)
    return maybe


def list_of(check):
    """A list whose every item passes `check` (the error names the item's place). No cap on its
    length: a memory may have had any number of wordings, and a store's export must import back."""
    def every(v):
        if not isinstance(v, list):
            raise RowError("must be a list")
        out = []
        for n, item in enumerate(v):
            try:
                out.append(check(item))
            except RowError as exc:
                raise RowError(f"item {n + 1} {exc}") from None
        return out
    return every


SEMANTICS = text(40)
TERMS = text(MAX_TERMS_CHARS, required=False)
NAME = text(STORED_NAME_CHARS)
NORMALIZED = text(STORED_NAME_CHARS, required=False)
TIME = whole
MEMORY_ID = ident("doc", "rec")
# Who deleted: a memory's sources, and a person rejecting a proposal in review (writepath/review.py).
TOMBSTONE_SOURCES = (*SOURCES, "review")
MEMORY = {  # the columns documents and records share
    "anchor_id": nullable(ident("anc")), "memory_class": one_of(MEMORY_CLASSES), "title": text(MAX_TITLE_CHARS),
    "body": text(MAX_BODY_CHARS), "aliases": TERMS, "facets": TERMS, "update_semantics": SEMANTICS,
    "audience": one_of(AUDIENCES), "boundary": boundary, "author_audience": one_of(AUDIENCES),
    "sensitivity": one_of(("normal", "secret")), "recall_mode": one_of(RECALL_MODES), "confidence": number01,
    "source": one_of(SOURCES), "session_id": nullable(ident("ses")), "provenance_json": json_object,
    "authored_at": TIME, "created_at": TIME, "freshness_at": TIME, "expires_at": nullable(TIME),
    "content_hash": hex64, "fingerprint": hex64,
}
FIELDS = {
    "anchor": {"anchor_id": ident("anc"), "anchor_type": NAME, "canonical_name": NAME,
               "normalized_name": NORMALIZED, "audience": one_of(AUDIENCES),
               "boundary": boundary, "status": one_of(("active", "tombstoned")), "created_at": TIME,
               "updated_at": TIME},
    "document": {**MEMORY, "document_id": ident("doc"), "updated_at": TIME, "revision": whole,
                 "deleted_at": nullable(TIME), "deactivated_reason": nullable(text(MAX_SHORT_CHARS))},
    "revision": {"document_id": ident("doc"), "revision": whole, "title": text(MAX_TITLE_CHARS),
                 "body": text(MAX_BODY_CHARS), "source": one_of(SOURCES),
                 "reason": nullable(text(MAX_SHORT_CHARS, required=False)), "created_at": TIME},
    "record": {**MEMORY, "record_id": ident("rec"), "supersedes_record_id": nullable(ident("rec")),
               "is_tombstone": one_of((0, 1)), "erased_at": nullable(TIME)},
    "edge": {"edge_id": ident("edge"), "from_anchor_id": ident("anc"), "relation": NAME,
             "to_anchor_id": ident("anc"), "audience": one_of(AUDIENCES), "boundary": boundary,
             "confidence": number01, "asserted_by": nullable(MEMORY_ID), "valid_from": TIME,
             "valid_to": nullable(TIME), "created_at": TIME},
    # A proposal a person rejected in review: the tombstone that keeps its claim away names it.
    "rejected_proposal": {"checkpoint_id": ident("cp"), "session_id": nullable(ident("ses")),
                          "trigger_type": one_of(tuple(TRIGGERS)), "priority": whole,
                          "payload_json": checkpoint_payload, "audience": one_of(AUDIENCES), "boundary": boundary,
                          "created_at": TIME, "updated_at": TIME, "completed_at": nullable(TIME)},
    "tombstone": {"tombstone_id": ident("tomb"), "fingerprint": hex64, "audience": one_of(AUDIENCES),
                  "boundary": boundary, "memory_id": nullable(ident("doc", "rec", "cp")),
                  "model_id": nullable(text(64)), "reason": nullable(text(MAX_SHORT_CHARS, required=False)),
                  "source": nullable(one_of(TOMBSTONE_SOURCES)), "lifted_at": nullable(TIME),
                  "erased_at": nullable(TIME), "created_at": TIME,
                  # the hashes of the memory's earlier wordings (tombstone_fingerprints), refused too
                  "earlier_fingerprints": list_of(hex64)},
    "anchor_alias": {"alias": NAME, "normalized_name": NORMALIZED, "anchor_id": ident("anc"),
                     "audience": one_of(AUDIENCES), "boundary": boundary, "created_at": TIME},
    "anchor_merge": {"merge_id": ident("merge"), "from_anchor_id": ident("anc"), "from_name": NAME,
                     "into_anchor_id": ident("anc"), "into_name": NAME, "memories_moved": whole,
                     "edges_moved": whole, "source": one_of(SOURCES), "created_at": TIME},
}
# Columns with a default: a row may leave them out (an export from an older schema).
OPTIONAL = {"aliases", "facets", "update_semantics", "sensitivity", "recall_mode", "confidence", "provenance_json",
            "revision", "is_tombstone", "status", "anchor_type", "normalized_name", "anchor_id", "session_id",
            "expires_at", "deleted_at", "deactivated_reason", "supersedes_record_id", "reason", "asserted_by",
            "valid_to", "memory_id", "model_id", "source", "lifted_at", "completed_at", "erased_at",
            "earlier_fingerprints"}


def check_row(kind: str, obj: dict) -> dict:
    """The row with every field checked (RowError names the first bad one), hashes recomputed."""
    fields = FIELDS[kind]
    unknown = sorted(set(obj) - set(fields))
    if unknown:
        raise RowError(f"unknown field(s) {', '.join(map(repr, unknown))} for a {kind}")
    missing = [f for f in fields if f not in obj and f not in OPTIONAL]
    if missing:
        raise RowError(f"a {kind} needs {', '.join(missing)}")
    row = {}
    for name, value in obj.items():
        try:
            row[name] = fields[name](value)
        except RowError as exc:
            raise RowError(f"{name} {exc}") from None
    refuse_secrets(f"this {kind}", *[v for v in row.values() if isinstance(v, str)])
    if kind in ("document", "record"):
        # What no write makes: a memory no reader sees, whose words the duplicate check still finds
        # (a hostile file's "I am allergic to peanuts." could never be stored again, nor be found).
        if row.get("sensitivity", "normal") != "normal":
            raise RowError("sensitivity is 'secret': Keepmind keeps no secret memories (an export holds none)")
        if row["author_audience"] == "public":
            raise RowError("author_audience is 'public': a public session forms no memories")
    if kind in ("document", "record"):  # derived from the text: never trusted from the file
        row["content_hash"], row["fingerprint"] = content_hash(row["title"], row["body"]), fingerprint(row["body"])
    if kind == "document":
        row["bears_on"] = bears_on(row["body"])
    if kind == "anchor":
        row["normalized_name"] = normalize_text(row["canonical_name"])
    if kind == "anchor_alias":
        row["normalized_name"] = normalize_text(row["alias"])
    if kind == "rejected_proposal":  # it was rejected: it waits for nothing until its tombstone is lifted
        row.update(status="discarded", available_at=row["created_at"])
    return row


def check_lines(entries: list[tuple[int, str, dict]]) -> tuple[list[tuple[int, str, dict]], list[str]]:
    """Check every row; returns the checked rows and the errors, each naming its line."""
    checked, errors = [], []
    for line, kind, obj in entries:
        try:
            checked.append((line, kind, check_row(kind, obj)))
        except RowError as exc:
            errors.append(f"line {line}: {exc}")
        except EngineError as exc:  # the secret rule
            errors.append(f"line {line}: {exc.message}")
    return checked, errors


# -- links and what is stored (on the writer, in the import's one transaction) -------------------

TABLES = {"anchor": ("memory_anchors", "anchor_id"), "document": ("memory_documents", "document_id"),
          "revision": ("memory_revisions", None), "record": ("memory_records", "record_id"),
          "edge": ("memory_edges", "edge_id"), "rejected_proposal": ("memory_checkpoints", "checkpoint_id"),
          "tombstone": ("tombstones", "tombstone_id"),
          "anchor_alias": ("anchor_aliases", None), "anchor_merge": ("anchor_merges", "merge_id")}
NEVER_CHANGED = "an import never changes a stored memory"


# What a memory row says and who sees it: a row whose id is stored must match the stored row in
# all of these to be "already stored". Bookkeeping that moves on its own (updated_at, deleted_at,
# the anchor an anchor merge moved it to) is not compared: the import leaves it as stored.
MEMORY_CONTENT = ("title", "body", "memory_class", "audience", "boundary", "aliases", "facets",
                  "recall_mode", "sensitivity")
# The graph and the tombstones by the same rule, leaving out what moves on its own there: an
# anchor's name (renamed), status (merged away), an edge's ends and audience (merges and
# narrowing move them), its end (valid_to), a tombstone being lifted.
CONTENT = {"document": MEMORY_CONTENT, "record": (*MEMORY_CONTENT, "supersedes_record_id", "is_tombstone"),
           "revision": ("title", "body"), "anchor": ("anchor_type", "audience", "boundary"),
           "edge": ("relation", "boundary", "valid_from", "asserted_by"),
           "tombstone": ("fingerprint", "audience", "boundary", "memory_id"),
           "anchor_merge": ("from_anchor_id", "from_name", "into_name")}


def _stored(conn: apsw.Connection, kind: str, row: dict) -> dict | None:
    """The stored row with this row's key (its content columns, or a marker), None when not stored."""
    table, key = TABLES[kind]
    columns = ", ".join(CONTENT[kind]) if kind in CONTENT else "1 AS x"
    if kind == "revision":
        return one(conn, f"SELECT {columns} FROM memory_revisions WHERE document_id=? AND revision=?",
                   (row["document_id"], row["revision"]))
    if kind == "anchor_alias":
        return one(conn, "SELECT 1 AS x FROM anchor_aliases WHERE audience=? AND boundary=? AND normalized_name=?",
                   (row["audience"], row["boundary"], row["normalized_name"]))
    return one(conn, f"SELECT {columns} FROM {table} WHERE {key}=?", (row[key],))


def _changed(kind: str, row: dict, stored: dict) -> list[str]:
    """The content columns in which a row differs from the stored row of the same id.

    The text is compared as it is written, not by the file's hashes (never trusted) nor by the
    normalized ones (they are blind to case and punctuation): a body, audience or class changed
    under the same id is never taken for the stored memory. A column the row leaves out is what
    the import would have written (its default); a left-out recall mode is not compared."""
    defaults = {"aliases": "", "facets": "", "sensitivity": "normal", "supersedes_record_id": None,
                "is_tombstone": 0, "recall_mode": stored.get("recall_mode"), "anchor_type": "concept"}
    return [c for c in CONTENT.get(kind, ()) if row.get(c, defaults.get(c)) != stored[c]]


def _same_anchor(conn: apsw.Connection, row: dict) -> str | None:
    found = one(conn, "SELECT anchor_id FROM memory_anchors WHERE audience=? AND boundary=? AND normalized_name=?",
                (row["audience"], row["boundary"], row["normalized_name"]))
    return found["anchor_id"] if found else None


def _rejected(kind: str, row: dict) -> str | None:
    """The proposal a tombstone from review names (a checkpoint id), if it is one."""
    memory_id = row.get("memory_id") if kind == "tombstone" else None
    return memory_id if memory_id and memory_id.startswith("cp-") else None


def _link_problem(kind: str, row: dict, in_file: dict, new: dict, proposals_here: set[str],
                  scopes: dict[str, tuple[str, str]]) -> str | None:
    """Why this row links outside the file or into a stored memory (None: it does not)."""
    memories = in_file["document"] | in_file["record"]
    if proposal := _rejected(kind, row):
        # The rejected proposal travels with its tombstone; an export made before it did holds the
        # tombstone alone, which still keeps the claim away. Never a proposal stored here.
        if proposal in proposals_here:
            return f"memory_id {proposal} names a proposal already here, not one of this file"
        return None
    if kind in ("document", "record") and row.get("anchor_id") and row["anchor_id"] not in in_file["anchor"]:
        return f"anchor_id {row['anchor_id']} is not an anchor of this file"
    if kind == "revision" and row["document_id"] not in new["document"]:
        if row["document_id"] in in_file["document"]:
            return f"it would add revision {row['revision']} to {row['document_id']}, which is stored: {NEVER_CHANGED}"
        return f"document_id {row['document_id']} is not a document of this file"
    if kind == "record" and row.get("supersedes_record_id"):
        target = row["supersedes_record_id"]
        if target in in_file["record"] and target not in new["record"]:
            return f"it would supersede {target}, which is stored: {NEVER_CHANGED}"
        if target not in in_file["record"]:
            return f"supersedes_record_id {target} is not a record of this file"
    ends = {"edge": ("from_anchor_id", "to_anchor_id"), "anchor_merge": ("from_anchor_id", "into_anchor_id"),
            "anchor_alias": ("anchor_id",)}
    for end in ends.get(kind, ()):
        if row[end] not in in_file["anchor"]:
            return f"{end} {row[end]} is not an anchor of this file"
    for field in ("asserted_by", "memory_id"):
        if kind in ("edge", "tombstone") and row.get(field) and row[field] not in memories:
            return f"{field} {row[field]} is not a memory of this file"
    # Nothing links across a scope: a team memory hung on a personal anchor showed that anchor's
    # name to team readers (a hostile file), as an edge between personal anchors did.
    own = (row.get("audience"), row.get("boundary"))
    for end in ("anchor_id", *ends.get(kind, ())):
        if kind in ("document", "record", "edge", "anchor_alias") and row.get(end) in scopes \
                and scopes[row[end]] != own:
            return f"{end} {row[end]} is an anchor of another scope ({'/'.join(scopes[row[end]])})"
    return None


def _session_problem(conn: apsw.Connection, kind: str, row: dict) -> str | None:
    """Why a memory row's session (its session_id, or its provenance's) is not one it can have been
    learnt in: a stored session of another boundary or audience (erasing the memory would blank
    that conversation's turns). A session this store does not hold (the file came from another
    machine) is only a name."""
    if kind not in ("document", "record"):
        return None
    named = {row.get("session_id")}
    try:
        prov = json.loads(row.get("provenance_json") or "{}")
    except ValueError:
        prov = {}
    if isinstance(prov, dict) and isinstance(prov.get("session_id"), str):
        named.add(prov["session_id"])
    readers = (row["audience"], "team") if row["audience"] == "personal" else (row["audience"],)
    for session_id in sorted(n for n in named if n):
        found = one(conn, "SELECT audience, boundary FROM sessions WHERE session_id=?", (session_id,))
        if found is not None and (found["boundary"] != row["boundary"] or found["audience"] not in readers):
            return f"session {session_id} is a session of another scope ({found['audience']}/{found['boundary']})"
    return None


def write_rows(conn: apsw.Connection, checked: list[tuple[int, str, dict]]) -> tuple[list[str], list[str], list[str]]:
    """Insert the checked rows that are not stored yet; (ids of the memories written, ids of those
    already stored as they are in the file, ids of those this store erased for good, left out with
    what only they named: erased_here).

    Raises ImportRefused (the transaction rolls back: nothing is imported) naming every line that
    would change a stored memory (its id is stored with other content), links outside the file or
    into a stored memory, or does not fit the schema.
    """
    in_file = {kind: {row[key] for _, k, row in checked if k == kind} for kind, (_, key) in TABLES.items() if key}
    remap: dict[str, str] = {}  # an imported anchor -> the stored anchor of the same name and scope
    new: dict[str, set] = {kind: set() for kind in TABLES}
    plan, written, skipped, errors = [], [], [], []
    erased = erased_here(conn, checked)
    for line, kind, row in _without_erased(conn, checked, erased):
        if (stored := _stored(conn, kind, row)) is not None:
            if changed := _changed(kind, row, stored):
                what = (f"revision {row['revision']} of {row['document_id']}" if kind == "revision"
                        else row[TABLES[kind][1]])
                errors.append(f"line {line}: {what} is stored with a different {' and '.join(changed)}: "
                              f"{NEVER_CHANGED}")
            elif kind in ("document", "record"):
                skipped.append(row[TABLES[kind][1]])
            continue
        if kind == "anchor" and (same := _same_anchor(conn, row)):
            remap[row["anchor_id"]] = same
            continue
        plan.append((line, kind, row))
        if TABLES[kind][1]:
            new[kind].add(row[TABLES[kind][1]])
    proposals_here = {cp for _, kind, row in plan if (cp := _rejected(kind, row))
                      and cp not in in_file["rejected_proposal"]
                      and _stored(conn, "rejected_proposal", {"checkpoint_id": cp})}
    scopes = {row["anchor_id"]: (row["audience"], row["boundary"]) for _, kind, row in checked if kind == "anchor"}
    for line, kind, row in plan:
        problem = _link_problem(kind, row, in_file, new, proposals_here, scopes) or _session_problem(conn, kind, row)
        if problem:
            errors.append(f"line {line}: {problem}")
            continue
        row = {k: remap.get(v, v) if k.endswith("anchor_id") else v for k, v in row.items()}
        earlier = row.pop("earlier_fingerprints", None) or ()  # a table of their own, not a column
        table = TABLES[kind][0]
        try:
            conn.execute(f"INSERT INTO {table}({','.join(row)}) VALUES ({','.join('?' * len(row))})",
                         tuple(row.values()))
            if earlier:
                add_tombstone_fingerprints(conn, row["tombstone_id"], earlier)
        except apsw.Error as exc:
            errors.append(f"line {line}: this {kind} does not fit the store ({exc})")
            continue
        if kind in ("document", "record"):
            written.append(row[TABLES[kind][1]])
    if errors:
        raise ImportRefused(errors)
    _settle_edges(conn, [row for _, kind, row in plan if kind == "edge" and row.get("from_anchor_id") in remap])
    return written, skipped, sorted(erased)


def erased_here(conn: apsw.Connection, checked: list[tuple[int, str, dict]]) -> set[str]:
    """The documents and records of the file whose text this store erased for good (purge.erase): an
    export made before the erase still holds it, and bringing it back would undo the erase. A
    record is erased with its whole chain, so a record of the file superseding one is too."""
    docs = [row["document_id"] for _, kind, row in checked if kind == "document"]
    found = {r["memory_id"] for r in rows(conn, "SELECT memory_id FROM tombstones WHERE erased_at IS NOT NULL"
                                                " AND memory_id IN (SELECT value FROM json_each(?))",
                                          (json.dumps(docs),))}
    records = [row for _, kind, row in checked if kind == "record"]
    found |= {r["record_id"] for r in rows(conn, "SELECT record_id FROM memory_records WHERE erased_at IS NOT NULL"
                                                 " AND record_id IN (SELECT value FROM json_each(?))",
                                           (json.dumps([r["record_id"] for r in records]),))}
    grew = True
    while grew:
        more = {r["record_id"] for r in records if r.get("supersedes_record_id") in found} - found
        found |= more
        grew = bool(more)
    return found


def _without_erased(conn: apsw.Connection, checked: list[tuple[int, str, dict]], erased: set[str]):
    """The rows of the file but those that would bring an erased memory's words back: the memory,
    its revisions, the edges it asserted, and the anchors only they named that the erase took away
    (an anchor something else of the file names is kept, and so are its aliases and merges)."""
    if not erased:
        yield from checked
        return
    gone_edges = {row["edge_id"] for _, kind, row in checked if kind == "edge" and row.get("asserted_by") in erased}
    named_by: dict[str, set[bool]] = {}  # anchor -> {True: named by an erased row, False: by another}
    for _, kind, row in checked:
        if kind in ("document", "record", "edge"):
            gone = row["edge_id"] in gone_edges if kind == "edge" else row[TABLES[kind][1]] in erased
            for end in ("anchor_id", "from_anchor_id", "to_anchor_id"):
                if row.get(end):
                    named_by.setdefault(row[end], set()).add(gone)
    gone_anchors = {a for a, by in named_by.items() if by == {True}
                    and _stored(conn, "anchor", {"anchor_id": a}) is None}
    for line, kind, row in checked:
        if ((kind in ("document", "record") and row[TABLES[kind][1]] in erased)
                or (kind == "revision" and row["document_id"] in erased)
                or (kind == "edge" and row["edge_id"] in gone_edges)
                or (kind in ("anchor", "anchor_alias") and row["anchor_id"] in gone_anchors)
                or (kind == "anchor_merge" and {row["from_anchor_id"], row["into_anchor_id"]} & gone_anchors)):
            continue
        yield line, kind, row


def _settle_edges(conn: apsw.Connection, imported: list[dict]) -> None:
    """Edges imported onto an anchor this store already had (the same person, by name) obey the
    graph's rules as if said here: an identical open edge is not kept twice, and of two open values
    of a one-value relation ("lives in" Madrid here, Porto in the file) the later holds and the
    earlier is closed when the later began."""
    for row in imported:
        edge = one(conn, "SELECT * FROM memory_edges WHERE edge_id=? AND valid_to IS NULL", (row["edge_id"],))
        if edge is None:
            continue
        same = one(conn, "SELECT edge_id FROM memory_edges WHERE from_anchor_id=? AND relation=? AND to_anchor_id=?"
                         " AND valid_to IS NULL AND edge_id != ?",
                   (edge["from_anchor_id"], edge["relation"], edge["to_anchor_id"], edge["edge_id"]))
        if same is not None:
            conn.execute("DELETE FROM memory_edges WHERE edge_id=?", (edge["edge_id"],))
            continue
        if edge["relation"] not in EXCLUSIVE:
            continue
        for other in conn.execute(
                "SELECT edge_id, valid_from FROM memory_edges WHERE from_anchor_id=? AND relation=? AND"
                " to_anchor_id != ? AND valid_to IS NULL AND edge_id != ?",
                (edge["from_anchor_id"], edge["relation"], edge["to_anchor_id"], edge["edge_id"])).fetchall():
            older, newer = sorted([(other[1], other[0]), (edge["valid_from"], edge["edge_id"])])
            conn.execute("UPDATE memory_edges SET valid_to=? WHERE edge_id=?", (newer[0], older[1]))
            if older[1] == edge["edge_id"]:
                break
