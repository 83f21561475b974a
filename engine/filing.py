"""Where a memory is filed once its text changed: under whom or where it now names (a correction by
a person, edit.py; an update curation appends, writepath/curation.py), and an anchor nothing uses
any more leaves the graph."""

from __future__ import annotations

import re

from . import store
from .db import one, scalar


def follow_anchor(conn, row: dict, memory_id: str, body: str, now: int) -> dict:
    """A memory filed under someone or somewhere its text named moves with the correction: "User
    lives in Lisbon." corrected to "…in Porto." is filed under Porto, not under a place it no
    longer names (nor in the Markdown export's lisbon.md). It moves only when the old text named
    its anchor (by name or alias), the new one does not, and the new one names whom or where it
    is about (entities.main_entity); topics and concepts, named by a person or an LLM, stay.
    The row as it now stands (its anchor_id); the old anchor leaves the graph once nothing uses it."""
    from .writepath import extractor  # the write path's cue phrases

    anchor = one(conn, "SELECT anchor_id, anchor_type FROM memory_anchors WHERE anchor_id=? AND anchor_type IN"
                       " ('person', 'place', 'organisation', 'membership', 'pet')", (row.get("anchor_id"),))
    if anchor is None:
        return row
    names = [n for (n,) in conn.execute(
        "SELECT canonical_name FROM memory_anchors WHERE anchor_id=?1 UNION"
        " SELECT alias FROM anchor_aliases WHERE anchor_id=?1", (anchor["anchor_id"],))]
    if any(says_name(body, n) for n in names) or not any(says_name(row["body"], n) for n in names):
        return row
    about = extractor.main_entity(extractor.graph_facts(body))
    if about is None:
        return row
    moved = store.upsert_anchor(conn, about.name, about.kind, row["audience"], row["boundary"], now)
    if moved is None or moved == anchor["anchor_id"]:
        return row
    return refile(conn, row, memory_id, anchor["anchor_id"], moved)


def refile(conn, row: dict, memory_id: str, old_anchor: str, new_anchor: str) -> dict:
    """File a memory under `new_anchor`; `old_anchor` leaves the graph once nothing uses it. The
    row as it now stands."""
    table, key = ("memory_documents", "document_id") if memory_id.startswith("doc-") else ("memory_records",
                                                                                         "record_id")
    conn.execute(f"UPDATE {table} SET anchor_id=? WHERE {key}=?", (new_anchor, memory_id))
    retire_if_empty(conn, old_anchor)
    return {**row, "anchor_id": new_anchor}


def says_name(text: str, name: str) -> bool:
    """True when `text` says `name` as a word (any case): "Bergen" is not in "Bergenfield"."""
    return bool(name.strip()) and re.search(rf"(?<!\w){re.escape(name.strip())}(?!\w)", text, re.I) is not None


def retire_if_empty(conn, anchor_id: str) -> None:
    """An anchor no memory and no edge points to any more leaves the graph (status tombstoned)."""
    used = scalar(conn, "SELECT EXISTS (SELECT 1 FROM memory_documents WHERE anchor_id=? AND deleted_at IS NULL)"
                        " OR EXISTS (SELECT 1 FROM memory_records WHERE anchor_id=?)"
                        " OR EXISTS (SELECT 1 FROM memory_edges WHERE from_anchor_id=? OR to_anchor_id=?)",
                  (anchor_id, anchor_id, anchor_id, anchor_id))
    if not used:
        conn.execute("UPDATE memory_anchors SET status='tombstoned' WHERE anchor_id=?", (anchor_id,))
