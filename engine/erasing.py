"""Blanking erased text where copies of it were kept: the marker it reads as, the wordings hunted
for, and the observer runs of a session. Used by an erase for good (purge.py) and by curation,
which keeps no copy of a proposal refused because its claim was erased (curation.apply)."""

from __future__ import annotations

import json

import apsw

from .db import rows

# What erased text reads as; migration 013's guard on memory_records checks for this literal.
ERASED_TEXT = "(erased)"
# A wording shorter than this is not hunted for inside other rows' text (a title like "Work" would
# blank that word in other memories' copies); the memory's own rows, its proposals and their
# entries in observer runs are blanked whole whatever their length.
MIN_HUNTED_CHARS = 12


def hunted_in(texts) -> list[str]:
    """The wordings worth hunting for inside other rows' text, longest first."""
    return sorted((t for t in texts if t and len(t) >= MIN_HUNTED_CHARS and t != ERASED_TEXT), key=len, reverse=True)


def blank(text: str, hunted: list[str]) -> str:
    """`text` with every hunted wording (as written, and as JSON writes it) replaced by the marker."""
    for t in hunted:
        text = text.replace(t, ERASED_TEXT)
        escaped = json.dumps(t)[1:-1]
        if escaped != t:
            text = text.replace(escaped, ERASED_TEXT)
    return text


def erase_observer_runs(conn: apsw.Connection, session_id: str, texts: set, hunted: list[str]) -> int:
    """The session's observer runs: a proposal of it among the accepted is blanked (kept as an
    entry, so a run still says how many it proposed), and any copy in a rejection or an error."""
    changed = 0
    for run in rows(conn, "SELECT run_id, accepted_json, rejections_json, error FROM observer_runs"
                          " WHERE session_id=?", (session_id,)):
        accepted = json.loads(run["accepted_json"] or "[]")
        for entry in accepted if isinstance(accepted, list) else []:
            if isinstance(entry, dict) and any(entry.get(k) in texts for k in ("title", "content")):
                for k in ("title", "content", "anchor"):
                    if k in entry:
                        entry[k] = ERASED_TEXT
        new = (blank(json.dumps(accepted), hunted), blank(run["rejections_json"] or "{}", hunted),
               blank(run["error"], hunted) if run["error"] else run["error"])
        if new != (run["accepted_json"], run["rejections_json"], run["error"]):
            conn.execute("UPDATE observer_runs SET accepted_json=?, rejections_json=?, error=? WHERE run_id=?",
                         (*new, run["run_id"]))
            changed += 1
    return changed
