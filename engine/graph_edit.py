"""A person's corrections to the knowledge graph: rename an anchor, merge two that are one thing.

Write functions (conn first, on the writer thread, never commit). An old name is never lost: a
rename and a merge keep it as an alias of the anchor it became (`anchor_aliases`), so the write
path files a later mention of it under that anchor (`store.upsert_anchor` reads aliases first),
and a merge is recorded (`anchor_merges`) with how much it moved, and item by item what it moved
(`anchor_merge_moves`), so the last merge into an anchor can be undone (`unmerge`).
"""

from __future__ import annotations

import apsw

from .db import one, rows
from .errors import InvalidInput, NotFound
from .graph import scope_sql
from .memory import new_id, normalize_text, without_display_controls
from .policy import Scope
from .secretfilter import refuse_secrets

MAX_NAME_CHARS = 200


def visible_anchor(conn: apsw.Connection, scope: Scope, anchor_id: str) -> dict:
    where, params = scope_sql("a", scope)
    row = one(conn, f"SELECT a.* FROM memory_anchors a WHERE a.anchor_id=? AND a.status='active' AND {where}",
              (anchor_id, *params))
    if row is None:
        raise NotFound(f"no anchor {anchor_id!r} that you can see")
    return row


def add_alias(conn: apsw.Connection, anchor: dict, name: str, now: int, *, current: str | None = None) -> None:
    """Keep `name` as a former name of `anchor` (unless it is the name it has: `current`)."""
    normalized = normalize_text(name)
    if not normalized or normalized == (current if current is not None else anchor["normalized_name"]):
        return
    conn.execute("INSERT OR REPLACE INTO anchor_aliases(alias, normalized_name, anchor_id, audience, boundary,"
                 " created_at) VALUES (?,?,?,?,?,?)",
                 (name.strip(), normalized, anchor["anchor_id"], anchor["audience"], anchor["boundary"], now))


def rename(conn: apsw.Connection, scope: Scope, anchor_id: str, name: str, now: int) -> str:
    """Give an anchor a new name; the old one stays as its alias. Returns the new name."""
    anchor = visible_anchor(conn, scope, anchor_id)
    if not isinstance(name, str) or not without_display_controls(name).strip():
        raise InvalidInput("the new name is empty: type the name the anchor should have")
    name = without_display_controls(name).strip()
    if "\x00" in name:
        raise InvalidInput("the name holds a control or invisible character (NUL, \\u0000): remove it")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInput(f"the name is {len(name)} characters; the limit is {MAX_NAME_CHARS}")
    # as for memory text: a pasted token as a name was kept, and as its alias after renaming back,
    # in the store and every export (whose import then refused it whole)
    refuse_secrets("the new name", name)
    normalized = normalize_text(name)
    if not normalized:
        raise InvalidInput("the new name needs a letter or a digit")
    if normalized != anchor["normalized_name"]:
        clash = one(conn, "SELECT anchor_id, canonical_name, status FROM memory_anchors WHERE audience=?"
                          " AND boundary=? AND normalized_name=?",
                    (anchor["audience"], anchor["boundary"], normalized))
        if clash is not None:
            raise InvalidInput(f"an anchor named {clash['canonical_name']!r} already exists here: "
                               "if they are the same thing, merge them instead")
        taken = one(conn, "SELECT anchor_id FROM anchor_aliases WHERE audience=? AND boundary=? AND normalized_name=?",
                    (anchor["audience"], anchor["boundary"], normalized))
        if taken is not None and taken["anchor_id"] != anchor_id:
            raise InvalidInput(f"{name!r} is already another anchor's former name: merge them instead")
        conn.execute("DELETE FROM anchor_aliases WHERE anchor_id=? AND normalized_name=?", (anchor_id, normalized))
        add_alias(conn, anchor, anchor["canonical_name"], now, current=normalized)
    conn.execute("UPDATE memory_anchors SET canonical_name=?, normalized_name=?, updated_at=? WHERE anchor_id=?",
                 (name, normalized, now, anchor_id))
    return name


def merge(conn: apsw.Connection, scope: Scope, from_id: str, into_id: str, now: int, *,
          source: str = "ui") -> dict:
    """Fold anchor `from_id` into `into_id`: its memories, edges and aliases move, its name
    becomes an alias, and the merge is recorded with what it moved. Returns the merge row."""
    if from_id == into_id:
        raise InvalidInput("choose another anchor to merge with: an anchor cannot merge into itself")
    old, into = visible_anchor(conn, scope, from_id), visible_anchor(conn, scope, into_id)
    if (old["audience"], old["boundary"]) != (into["audience"], into["boundary"]):
        raise InvalidInput(f"{old['canonical_name']!r} ({old['audience']}, {old['boundary']}) and "
                           f"{into['canonical_name']!r} ({into['audience']}, {into['boundary']}) are in different "
                           "audiences or boundaries: only anchors in the same one can be merged")
    # An edge between the two (Anna lives_in Porto, Porto merged into Anna) would become a loop on one
    # anchor ("Previously lives in Anna", drawn as a self-loop): it stays as it was, between them, and
    # stops holding; an undo opens it again. graph.edges shows no edge to a merged-away anchor.
    between = {r["edge_id"]: r["valid_to"] for r in rows(
        conn, "SELECT edge_id, valid_to FROM memory_edges WHERE (from_anchor_id=? AND to_anchor_id=?)"
              " OR (from_anchor_id=? AND to_anchor_id=?)", (from_id, into_id, into_id, from_id))}
    moves = [(kind, item) for kind, sql in _MOVED.items() for (item,) in conn.execute(sql, (from_id,))
             if not (kind.startswith("edge_") and item in between)]
    moves += [("edge_closed", item) for item, valid_to in between.items() if valid_to is None]
    between_marks = ",".join("?" * len(between))
    keep_between = f" AND edge_id NOT IN ({between_marks})" if between else ""
    replaced = one(conn, "SELECT anchor_id FROM anchor_aliases WHERE audience=? AND boundary=? AND normalized_name=?",
                   (into["audience"], into["boundary"], old["normalized_name"]))
    conn.execute("UPDATE memory_documents SET anchor_id=? WHERE anchor_id=?", (into_id, from_id))
    moved = conn.changes()
    conn.execute("UPDATE memory_records SET anchor_id=? WHERE anchor_id=?", (into_id, from_id))
    moved += conn.changes()
    conn.execute(f"UPDATE memory_edges SET from_anchor_id=? WHERE from_anchor_id=?{keep_between}",
                 (into_id, from_id, *between))
    edges = conn.changes()
    conn.execute(f"UPDATE memory_edges SET to_anchor_id=? WHERE to_anchor_id=?{keep_between}",
                 (into_id, from_id, *between))
    edges += conn.changes()
    conn.executemany("UPDATE memory_edges SET valid_to=? WHERE edge_id=?",
                     [(now, item) for item, valid_to in between.items() if valid_to is None])
    conn.execute("UPDATE anchor_aliases SET anchor_id=? WHERE anchor_id=?", (into_id, from_id))
    if old["normalized_name"] != into["normalized_name"] and (replaced is None or replaced["anchor_id"] != into_id):
        moves.append(("alias_added", old["normalized_name"]))  # not when `into` had that alias already
        if replaced is not None:
            moves.append(("alias_replaced", replaced["anchor_id"]))
    add_alias(conn, into, old["canonical_name"], now)
    conn.execute("UPDATE memory_anchors SET status='tombstoned', updated_at=? WHERE anchor_id=?", (now, from_id))
    conn.execute("UPDATE memory_anchors SET updated_at=? WHERE anchor_id=?", (now, into_id))
    merge_row = {"merge_id": new_id("merge"), "from_anchor_id": from_id, "from_name": old["canonical_name"],
                 "into_anchor_id": into_id, "into_name": into["canonical_name"], "memories_moved": moved,
                 "edges_moved": edges, "source": source, "created_at": now}
    conn.execute(f"INSERT INTO anchor_merges({','.join(merge_row)}) VALUES ({','.join('?' * len(merge_row))})",
                 tuple(merge_row.values()))
    conn.executemany("INSERT INTO anchor_merge_moves(merge_id, kind, item_id) VALUES (?,?,?)",
                     [(merge_row["merge_id"], kind, item) for kind, item in moves])
    return merge_row


# What a merge moves off the merged-away anchor, read before it moves (kind -> the ids, given its id).
_MOVED = {
    "document": "SELECT document_id FROM memory_documents WHERE anchor_id=?",
    "record": "SELECT record_id FROM memory_records WHERE anchor_id=?",
    "edge_from": "SELECT edge_id FROM memory_edges WHERE from_anchor_id=?",
    "edge_to": "SELECT edge_id FROM memory_edges WHERE to_anchor_id=?",
    "alias": "SELECT normalized_name FROM anchor_aliases WHERE anchor_id=?",
}


def edges_between(conn: apsw.Connection, scope: Scope, a_id: str, b_id: str) -> list:
    """The edges holding now between two anchors (either way), which a merge of one into the other drops."""
    from .graph import edges

    return [e for e in edges(conn, scope, a_id) if {e.from_id, e.to_id} == {a_id, b_id} and e.valid_to is None]


def undoable(conn: apsw.Connection, merge: dict) -> str | None:
    """Why this merge cannot be undone now (None when it can): only the last merge into an anchor
    still standing, made by this store (what it moved was recorded)."""
    into = one(conn, "SELECT status FROM memory_anchors WHERE anchor_id=?", (merge["into_anchor_id"],))
    if into is None or into["status"] != "active":
        later = merged_into(conn, merge["into_anchor_id"])
        onto = f" into “{later['into_name']}”" if later else ""
        return f"“{merge['into_name']}” was merged{onto} since: undo that merge first"
    last = one(conn, "SELECT merge_id, from_name FROM anchor_merges WHERE into_anchor_id=?"
                     " ORDER BY created_at DESC, rowid DESC LIMIT 1", (merge["into_anchor_id"],))
    if last["merge_id"] != merge["merge_id"]:
        return f"“{last['from_name']}” was merged into “{merge['into_name']}” since: undo that merge first"
    if one(conn, "SELECT 1 AS x FROM anchor_merge_moves WHERE merge_id=? LIMIT 1", (merge["merge_id"],)) is None \
            and merge["memories_moved"] + merge["edges_moved"] > 0:
        return ("this merge came with an import or was made before Keepmind kept what a merge moves: "
                "it cannot be undone here")
    return None


def unmerge(conn: apsw.Connection, scope: Scope, merge_id: str, now: int) -> dict:
    """Undo the last merge into an anchor: the merged-away anchor stands again with its name, and
    the memories, edges and aliases the merge moved go back to it (those since corrected into a new
    record, and what was written onto the anchor after the merge, stay). Returns what went back."""
    merge = one(conn, "SELECT * FROM anchor_merges WHERE merge_id=?", (merge_id,))
    if merge is None:
        raise NotFound(f"no merge {merge_id!r}: it was undone already, or never made")
    where, params = scope_sql("a", scope)
    into = one(conn, f"SELECT a.* FROM memory_anchors a WHERE a.anchor_id=? AND {where}",
               (merge["into_anchor_id"], *params))
    if into is None:
        raise NotFound(f"no merge {merge_id!r}: it was undone already, or never made")  # as if none: not its scope
    if (why := undoable(conn, merge)) is not None:
        raise InvalidInput(why)
    from_id, into_id = merge["from_anchor_id"], merge["into_anchor_id"]
    moved: dict[str, list[str]] = {}
    for kind, item in conn.execute("SELECT kind, item_id FROM anchor_merge_moves WHERE merge_id=?", (merge_id,)):
        moved.setdefault(kind, []).append(item)
    back = 0
    for kind, table, column, key in (("document", "memory_documents", "anchor_id", "document_id"),
                                     ("record", "memory_records", "anchor_id", "record_id"),
                                     ("edge_from", "memory_edges", "from_anchor_id", "edge_id"),
                                     ("edge_to", "memory_edges", "to_anchor_id", "edge_id")):
        for item in moved.get(kind, []):
            conn.execute(f"UPDATE {table} SET {column}=? WHERE {key}=? AND {column}=?", (from_id, item, into_id))
            back += conn.changes() if kind in ("document", "record") else 0
    edges_back = len({*moved.get("edge_from", []), *moved.get("edge_to", []), *moved.get("edge_closed", [])})
    for item in moved.get("edge_closed", []):  # the edge between the two, which the merge closed, holds again
        conn.execute("UPDATE memory_edges SET valid_to=NULL WHERE edge_id=? AND valid_to=?",
                     (item, merge["created_at"]))
    for name in moved.get("alias", []):
        conn.execute("UPDATE anchor_aliases SET anchor_id=? WHERE anchor_id=? AND normalized_name=?",
                     (from_id, into_id, name))
    for name in moved.get("alias_added", []):
        conn.execute("DELETE FROM anchor_aliases WHERE anchor_id=? AND normalized_name=?", (into_id, name))
        for owner in moved.get("alias_replaced", []):
            conn.execute("INSERT OR IGNORE INTO anchor_aliases(alias, normalized_name, anchor_id, audience, boundary,"
                         " created_at) VALUES (?,?,?,?,?,?)",
                         (merge["from_name"], name, owner, into["audience"], into["boundary"], now))
    conn.execute("UPDATE memory_anchors SET status='active', updated_at=? WHERE anchor_id=?", (now, from_id))
    conn.execute("UPDATE memory_anchors SET updated_at=? WHERE anchor_id=?", (now, into_id))
    conn.execute("DELETE FROM anchor_merge_moves WHERE merge_id=?", (merge_id,))
    conn.execute("DELETE FROM anchor_merges WHERE merge_id=?", (merge_id,))
    return {"from_anchor_id": from_id, "from_name": merge["from_name"], "into_anchor_id": into_id,
            "into_name": merge["into_name"], "memories_back": back, "edges_back": edges_back}


def aliases(conn: apsw.Connection, anchor_id: str) -> list[str]:
    return [r["alias"] for r in rows(conn, "SELECT alias FROM anchor_aliases WHERE anchor_id=? ORDER BY alias",
                                     (anchor_id,))]


def merges(conn: apsw.Connection, anchor_id: str) -> list[dict]:
    """The merges that folded other anchors into this one, newest first."""
    return rows(conn, "SELECT * FROM anchor_merges WHERE into_anchor_id=? ORDER BY created_at DESC", (anchor_id,))


def merged_into(conn: apsw.Connection, anchor_id: str) -> dict | None:
    """Where a merged-away anchor went (so an old link can point on)."""
    return one(conn, "SELECT * FROM anchor_merges WHERE from_anchor_id=? ORDER BY created_at DESC LIMIT 1",
               (anchor_id,))


__all__ = ["aliases", "edges_between", "merge", "merged_into", "merges", "rename", "undoable", "unmerge"]
