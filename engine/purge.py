"""Erase for good: a memory deleted as wrong leaves every place Keepmind held its text.

A deletion as wrong is soft on purpose (restore brings it back, corrections.py). Some text must
not stay at all (a PIN hint, a wrong and hurtful claim about a friend): `erase` blanks it in the
memory and all its revisions (or its whole record chain), the search index, the proposals that
made it and curation's copies of them, the session turns it was learnt from, the observer runs
that proposed it, the recall receipts and labels that named it, and the graph it alone asserted.

What stays, on purpose: the tombstone with the claim's fingerprint (a hash of its normalized
words) and those of its earlier wordings (tombstone_fingerprints, hashes too), so the same claim
is still not learnt again in any wording it had; and the ids, times and counts of everything
(a session keeps its number of turns, a receipt still says a memory was injected), so nothing
else shifts. An erase cannot be undone, so a restore of its tombstone is refused.

Write functions (conn first, run on the writer thread, never commit).
"""

from __future__ import annotations

import json
import re

import apsw

from .corrections import restore as _restore
from .corrections import tombstone_row
from .db import one, rows, scalar
from .erasing import ERASED_TEXT, blank, erase_observer_runs, hunted_in
from .errors import InvalidInput
from .memory import normalize_text, text_terms
from .store import forget_in_receipts, receipts_naming

NOTHING_TO_RESTORE = "erased for good: nothing left to restore"


def erase(conn: apsw.Connection, tombstone_id: str, now: int, *, ceiling: str,
          boundaries: tuple[str, ...] | None) -> dict:
    """Erase the text of the memory a standing tombstone deleted; returns what was erased, counted.

    The tombstone must be one the caller may see (corrections.tombstone_row), and its memory must
    be deleted still (a live memory is deleted first, as wrong, then erased)."""
    tomb = tombstone_row(conn, tombstone_id, ceiling, boundaries)
    if tomb.get("erased_at") is not None:
        raise InvalidInput("this memory was erased for good already")
    memory_id = tomb["memory_id"] or ""
    texts: set[str] = set()  # every wording it had, hunted for in the copies kept elsewhere
    turns: dict[str, set[int]] = {}  # session -> the turns it was learnt from
    checkpoints: set[str] = set()
    ids = [memory_id] if memory_id else []
    anchors: set[str] = set()
    counts = {"revisions": 0, "records": 0, "checkpoints": 0, "turns": 0, "observer_runs": 0,
              "curation_events": 0, "receipts": 0, "anchors": 0, "edges": 0}

    if memory_id.startswith("doc-"):
        doc = one(conn, "SELECT * FROM memory_documents WHERE document_id=?", (memory_id,))
        if doc is None or doc["deleted_at"] is None:
            raise InvalidInput("only a memory deleted as wrong can be erased: delete it first")
        texts |= {doc["title"], doc["body"], *text_terms(doc["aliases"])}
        for rev in rows(conn, "SELECT title, body FROM memory_revisions WHERE document_id=?", (memory_id,)):
            texts |= {rev["title"], rev["body"]}
        _provenance(doc["provenance_json"], doc["session_id"], turns, checkpoints)
        anchors.add(doc["anchor_id"])
        conn.execute("UPDATE memory_revisions SET title=?, body=? WHERE document_id=?",
                     (ERASED_TEXT, ERASED_TEXT, memory_id))
        counts["revisions"] = conn.changes()
        # deleted_at is set, so the index triggers (003) neither remove nor add it: it left the
        # index when it was deleted
        conn.execute("UPDATE memory_documents SET title=?, body=?, aliases='', facets='', anchor_id=NULL,"
                     " deactivated_reason=NULL, bears_on=NULL WHERE document_id=?",
                     (ERASED_TEXT, ERASED_TEXT, memory_id))
        forget_in_receipts(conn, {"id": memory_id, "kind": "document"})
    elif memory_id.startswith("rec-"):
        chain = _chain(conn, memory_id)
        if not chain or not chain[-1]["is_tombstone"]:
            raise InvalidInput("only a memory deleted as wrong can be erased: delete it first")
        ids = [r["record_id"] for r in chain]
        for r in chain:
            if not r["is_tombstone"]:
                texts |= {r["body"], *text_terms(r["aliases"])}
            texts.add(r["title"])
            _provenance(r["provenance_json"], r["session_id"], turns, checkpoints)
            anchors.add(r["anchor_id"])
        # the one update the append-only guard lets through (migration 013); none of the chain is
        # in the index (the tombstone at its head is never indexed, the rest were superseded)
        conn.execute(
            f"UPDATE memory_records SET erased_at=?, title=?, body=?, aliases='', facets='', anchor_id=NULL"
            f" WHERE record_id IN ({','.join('?' * len(ids))})", (now, ERASED_TEXT, ERASED_TEXT, *ids))
        counts["records"] = len(ids)
        forget_in_receipts(conn, {"id": ids[-1], "kind": "record"})
    elif memory_id.startswith("cp-"):  # a proposal rejected in review: only the proposal held it
        checkpoints.add(memory_id)

    for memory in ids:  # the proposals that made it or were added to it, and the refused repeats
        for (cp,) in conn.execute("SELECT DISTINCT e.checkpoint_id FROM curation_events e, json_each(e.targets_json) j"
                                  " WHERE j.value=? AND e.checkpoint_id IS NOT NULL", (memory,)):
            checkpoints.add(cp)
    for cp in sorted(checkpoints):
        counts["checkpoints"] += _erase_checkpoint(conn, cp, texts, turns)
    turns = _learnt_in_reach(conn, turns, tomb["audience"], tomb["boundary"])
    # The turns it was learnt from are blanked whole. Other turns say it too ("Please remember that
    # my dog is a beagle named Rolo." before the agent's store_memory, whose provenance names no
    # turn, or the same said in another conversation of its scope): left, the observer would learn
    # it again from them. Their sentences that say it are blanked, and proposals of its scope that
    # say it and still wait are dropped.
    claims = [words for t in texts if t and t != ERASED_TEXT and len(words := content_words(t)) >= 3]
    counts["checkpoints"] += _drop_waiting(conn, tomb["audience"], tomb["boundary"], claims, texts, turns, now)
    hunted = hunted_in(texts)
    spoken = [(r["session_id"], r["user_text"]) for session_id, indexes in turns.items() for index in indexes
              for r in rows(conn, "SELECT session_id, user_text FROM session_turns WHERE session_id=? AND turn_index=?",
                            (session_id, index)) if r["user_text"] and r["user_text"] != ERASED_TEXT]
    for session_id, indexes in turns.items():
        for index in sorted(indexes):
            conn.execute("UPDATE session_turns SET user_text=CASE WHEN user_text='' THEN '' ELSE ?1 END,"
                         " assistant_text=CASE WHEN assistant_text='' THEN '' ELSE ?1 END, tools_json='[]'"
                         " WHERE session_id=?2 AND turn_index=?3", (ERASED_TEXT, session_id, index))
            counts["turns"] += conn.changes()
    said_in = _blank_sentences_saying(conn, tomb["audience"], tomb["boundary"], claims)
    counts["turns"] += sum(len(v) for v in said_in.values())
    for session_id in {*turns, *said_in}:
        counts["observer_runs"] += erase_observer_runs(conn, session_id, texts, hunted)
    counts["curation_events"] = _erase_events(conn, checkpoints, ids, hunted)
    erased_words = frozenset().union(*(content_words(t) for t in texts if t and t != ERASED_TEXT))
    counts["receipts"] = (_erase_receipt_copies(conn, ids, hunted, erased_words)
                          + _erase_turn_receipts(conn, spoken, hunted))
    counts["edges"], counts["anchors"] = _erase_graph(conn, ids, anchors)
    if ids:
        conn.execute(f"DELETE FROM memory_embeddings WHERE item_id IN ({','.join('?' * len(ids))})", ids)
        conn.execute(f"DELETE FROM recall_feedback WHERE item_id IN ({','.join('?' * len(ids))})", ids)
    # Recall's saved word counts hold its stems: counted again from the live store on the next start.
    conn.execute("DELETE FROM recall_term_stats")
    # A deleted row's words stay in the index's segments until they are merged: merge them now,
    # so not even the raw index holds them.
    for fts in ("memory_documents_fts", "memory_records_fts"):
        conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")
    conn.execute("UPDATE tombstones SET erased_at=?, reason=NULL, vector=NULL, model_id=NULL WHERE tombstone_id=?",
                 (now, tombstone_id))
    return {"tombstone_id": tombstone_id, "memory_id": memory_id or None, "ids": ids, **counts}


def restore_unless_erased(conn: apsw.Connection, tombstone_id: str, now: int, *, ceiling: str,
                          boundaries: tuple[str, ...] | None, source: str = "ui") -> str:
    """corrections.restore, refused for a tombstone whose memory was erased (there is no text to
    bring back, and a blank memory would be learnt over nothing)."""
    if scalar(conn, "SELECT erased_at FROM tombstones WHERE tombstone_id=?", (tombstone_id,)) is not None:
        tombstone_row(conn, tombstone_id, ceiling, boundaries)  # someone else's says NotFound, not why
        raise InvalidInput(NOTHING_TO_RESTORE)
    return _restore(conn, tombstone_id, now, ceiling=ceiling, boundaries=boundaries, source=source)


def erased_at(conn: apsw.Connection, tombstone_ids: list[str]) -> dict[str, int]:
    """When each of these tombstones' memories was erased (only the erased ones are keys)."""
    if not tombstone_ids:
        return {}
    return {r[0]: r[1] for r in conn.execute(
        f"SELECT tombstone_id, erased_at FROM tombstones WHERE erased_at IS NOT NULL"
        f" AND tombstone_id IN ({','.join('?' * len(tombstone_ids))})", list(tombstone_ids))}


# -- the places a copy is kept ---------------------------------------------------------------------


def _learnt_in_reach(conn: apsw.Connection, turns: dict[str, set[int]], audience: str,
                     boundary: str) -> dict[str, set[int]]:
    """The provenance turns of sessions a memory of this scope can have been learnt in: of its
    boundary, and of its audience or, for a personal memory, a team one (a team memory made
    personal). A hostile import named a personal conversation as a team memory's source, and a
    team token's erase blanked it."""
    readers = (audience, "team") if audience == "personal" else (audience,)
    kept = {}
    for session_id, indexes in turns.items():
        found = one(conn, "SELECT audience, boundary FROM sessions WHERE session_id=?", (session_id,))
        if found is not None and found["boundary"] == boundary and found["audience"] in readers:
            kept[session_id] = indexes
    return kept


def _provenance(text: str | None, session_id: str | None, turns: dict, checkpoints: set) -> None:
    """Collect the session turns and checkpoints a provenance names."""
    try:
        prov = json.loads(text or "{}")
    except ValueError:
        prov = {}
    prov = prov if isinstance(prov, dict) else {}
    session = prov.get("session_id") or session_id
    if session:
        turns.setdefault(session, set()).update(t for t in prov.get("turns") or [] if isinstance(t, int))
    for ext in prov.get("external") or []:
        if isinstance(ext, dict) and isinstance(ext.get("checkpoint"), str):
            checkpoints.add(ext["checkpoint"])


# Words a claim's own words are told apart without: whose it is and how it is joined.
_LIGHT = frozenset({"the", "and", "for", "that", "this", "with", "was", "were", "are", "has", "have", "had", "user",
                    "not", "but", "from", "you", "your", "she", "her", "his", "him", "its", "who", "our", "mine",
                    "named", "called"})
SAYS_SHARE = 0.8  # of a claim's words a turn holds to say it ("Noted: your dog Rolo is a beagle." does)


def content_words(text: str) -> frozenset[str]:
    """A text's words of three letters or more, whose and joining words left out."""
    return frozenset(w for w in normalize_text(text).split() if len(w) >= 3 and w not in _LIGHT)


def _says(text: str, claims: list[frozenset[str]]) -> bool:
    """True when `text` holds most of the words of one of the claims (SAYS_SHARE of them, two at least)."""
    words = content_words(text)
    return any(len(c & words) >= max(2, SAYS_SHARE * len(c)) for c in claims)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _blank_sentences_saying(conn: apsw.Connection, audience: str, boundary: str,
                            claims: list[frozenset[str]]) -> dict[str, set[int]]:
    """In every turn of the scope's sessions, the sentences that say one of the claims become the
    marker; the turn's other sentences stay ("…named Rolo. Also, I live in Porto." keeps Porto).
    Returns session -> the turns changed."""
    changed: dict[str, set[int]] = {}
    if not claims:
        return changed
    for r in rows(conn, "SELECT t.session_id, t.turn_index, t.user_text, t.assistant_text FROM session_turns t"
                        " JOIN sessions s ON s.session_id = t.session_id WHERE s.audience=? AND s.boundary=?"
                        " AND (t.user_text != ?3 OR t.assistant_text != ?3)", (audience, boundary, ERASED_TEXT)):
        new = [_without_sentences_saying(r[k], claims) for k in ("user_text", "assistant_text")]
        if new != [r["user_text"], r["assistant_text"]]:
            conn.execute("UPDATE session_turns SET user_text=?, assistant_text=? WHERE session_id=? AND turn_index=?",
                         (*new, r["session_id"], r["turn_index"]))
            changed.setdefault(r["session_id"], set()).add(r["turn_index"])
    return changed


def _without_sentences_saying(text: str, claims: list[frozenset[str]]) -> str:
    if not text or not _says(text, claims):  # most turns: one look at the whole, no split
        return text
    parts = _SENTENCE_END.split(text)
    kept = [ERASED_TEXT if _says(part, claims) else part for part in parts]
    return " ".join(kept) if kept != parts else text


def _drop_waiting(conn: apsw.Connection, audience: str, boundary: str, claims: list[frozenset[str]], texts: set,
                  turns: dict, now: int) -> int:
    """Proposals of the scope that say one of the claims and wait (for curation or review, or
    dead): blanked, and discarded, so nothing learns the erased claim from them."""
    dropped = 0
    if not claims:
        return dropped
    for row in rows(conn, "SELECT checkpoint_id, payload_json FROM memory_checkpoints WHERE audience=? AND boundary=?"
                          " AND status IN ('pending', 'review', 'dead')", (audience, boundary)):
        try:
            proposal = (json.loads(row["payload_json"] or "{}").get("proposal") or {})
        except (ValueError, AttributeError):
            continue
        if _says(" ".join(str(proposal.get(k) or "") for k in ("title", "content")), claims):
            dropped += _erase_checkpoint(conn, row["checkpoint_id"], texts, turns)
            conn.execute("UPDATE memory_checkpoints SET status='discarded', lease_owner=NULL, lease_expires_at=NULL,"
                         " updated_at=?, completed_at=? WHERE checkpoint_id=?", (now, now, row["checkpoint_id"]))
    return dropped


def _chain(conn: apsw.Connection, record_id: str) -> list[dict]:
    """Every record of the chain `record_id` is in, oldest first (the ones it replaced and the
    ones that replaced it, its tombstone last)."""
    older = rows(conn, "WITH RECURSIVE c(id, depth) AS (SELECT ?, 0 UNION ALL"
                       " SELECT r.supersedes_record_id, c.depth + 1 FROM memory_records r JOIN c ON r.record_id = c.id"
                       " WHERE r.supersedes_record_id IS NOT NULL)"
                       " SELECT r.* FROM c JOIN memory_records r ON r.record_id = c.id ORDER BY c.depth DESC",
                 (record_id,))
    newer = rows(conn, "WITH RECURSIVE c(id, depth) AS (SELECT ?, 0 UNION ALL"
                       " SELECT r.record_id, c.depth + 1 FROM memory_records r JOIN c ON r.supersedes_record_id = c.id)"
                       " SELECT r.* FROM c JOIN memory_records r ON r.record_id = c.id WHERE c.depth > 0"
                       " ORDER BY c.depth", (record_id,))
    return older + newer


def _erase_checkpoint(conn: apsw.Connection, checkpoint_id: str, texts: set, turns: dict) -> int:
    """Blank a proposal's words (its wordings join `texts`, its source turns join `turns`)."""
    row = one(conn, "SELECT payload_json, session_id, last_error FROM memory_checkpoints WHERE checkpoint_id=?",
              (checkpoint_id,))
    if row is None:
        return 0
    payload = json.loads(row["payload_json"] or "{}")
    proposal = payload.get("proposal") if isinstance(payload, dict) else None
    if isinstance(proposal, dict):
        for key, value in list(proposal.items()):
            # the anchor and subject are blanked here but not hunted elsewhere: a name like "Anna"
            # is other memories' too
            if key in ("title", "content", "anchor", "subject") and isinstance(value, str):
                if key in ("title", "content"):
                    texts.add(value)
                proposal[key] = ERASED_TEXT
            elif key in ("aliases", "facets", "relations") and isinstance(value, list):
                if key == "aliases":
                    texts.update(v for v in value if isinstance(v, str))
                proposal[key] = []
    prov = payload.get("provenance") if isinstance(payload, dict) else None
    if isinstance(prov, dict):
        _provenance(json.dumps(prov), row["session_id"], turns, set())
    hunted = hunted_in(texts)
    if isinstance(payload, dict):
        payload["erased"] = True
    conn.execute("UPDATE memory_checkpoints SET payload_json=?, last_error=? WHERE checkpoint_id=?",
                 (blank(json.dumps(payload, sort_keys=True), hunted),
                  blank(row["last_error"], hunted) if row["last_error"] else row["last_error"], checkpoint_id))
    return 1


def _erase_events(conn: apsw.Connection, checkpoints: set, ids: list[str], hunted: list[str]) -> int:
    """Curation's decisions on those proposals, or naming the memory: their reason and detail."""
    changed = 0
    found = {}
    for cp in checkpoints:
        for r in rows(conn, "SELECT event_id, reason, detail_json FROM curation_events WHERE checkpoint_id=?", (cp,)):
            found[r["event_id"]] = r
    for memory in ids:
        for r in rows(conn, "SELECT e.event_id, e.reason, e.detail_json FROM curation_events e,"
                            " json_each(e.targets_json) j WHERE j.value=?", (memory,)):
            found[r["event_id"]] = r
    for r in found.values():
        reason, detail = blank(r["reason"], hunted), blank(r["detail_json"], hunted)
        if (reason, detail) != (r["reason"], r["detail_json"]):
            conn.execute("UPDATE curation_events SET reason=?, detail_json=? WHERE event_id=?",
                         (reason, detail, r["event_id"]))
            changed += 1
    return changed


def _erase_receipt_copies(conn: apsw.Connection, ids: list[str], hunted: list[str],
                          erased_words: frozenset[str]) -> int:
    """Receipts that named it (store.forget_in_receipts blanked its items): the message that
    recalled it and the words planned from it go too when they asked after it (it was injected, or
    the message shares a word of it: "the zanzibar… on Tuesdays?"), with the copies of that message
    kept with people's labels on the same recall, and any other copy of its words. A recall that
    only had it among its candidates keeps its message ("Where does my sister Anna live?" had become
    "(erased)" when a memory about a dog was). Its items are marked `erased` (the receipt's page
    linked them to a Not found). The other items and every count and reason stay."""
    changed = 0
    for receipt_id, text in receipts_naming(conn, ids):
        body = json.loads(text)
        asked = isinstance(body, dict) and (
            any(isinstance(i, dict) and i.get("id") in ids for i in body.get("injected") or [])
            or bool(content_words(str(body.get("query") or "")) & erased_words))
        if isinstance(body, dict):  # the receipt's page says "erased" of it, and links nowhere
            for key in ("injected", "considered"):
                for item in body.get(key) or []:
                    if isinstance(item, dict) and item.get("id") in ids:
                        item["erased"] = True
        if asked:
            body["query"] = ERASED_TEXT
            plan = body.get("plan")
            if isinstance(plan, dict):
                body["plan"] = {k: [] if isinstance(v, list) else v for k, v in plan.items()}
        new = blank(json.dumps(body), hunted)
        if new == text:
            continue
        if asked:
            conn.execute("UPDATE recall_events SET query=?, receipt_json=? WHERE receipt_id=?",
                         (ERASED_TEXT, new, receipt_id))
            conn.execute("UPDATE recall_feedback SET query=? WHERE receipt_id=?", (ERASED_TEXT, receipt_id))
        else:
            conn.execute("UPDATE recall_events SET receipt_json=? WHERE receipt_id=?", (new, receipt_id))
        changed += 1
    return changed


def _erase_turn_receipts(conn: apsw.Connection, spoken: list[tuple[str, str]], hunted: list[str]) -> int:
    """The recalls made for the turns it was learnt from: recall runs before a turn is stored and
    before the memory exists, so its receipt never names the memory, and the sentence erased from
    the turn stayed on the Recalls list, the Overview and the receipt (a walk: "I hate cilantro, it
    tastes like soap to me."). A receipt of the same session whose message is that turn's text, or
    a part of it (a hook sends the prompt whole; an agent may send a sentence of it), goes."""
    changed = 0
    for session_id, said in spoken:
        said = said.strip()
        for r in rows(conn, "SELECT receipt_id, query, receipt_json FROM recall_events WHERE session_id=?"
                            " AND query != ?", (session_id, ERASED_TEXT)):
            query = (r["query"] or "").strip()
            if not query or (query not in said and said not in query):
                continue
            try:
                body = json.loads(r["receipt_json"])
            except ValueError:
                body = {}
            if isinstance(body, dict):
                body["query"] = ERASED_TEXT
                if isinstance(body.get("plan"), dict):
                    body["plan"] = {k: [] if isinstance(v, list) else v for k, v in body["plan"].items()}
            conn.execute("UPDATE recall_events SET query=?, receipt_json=? WHERE receipt_id=?",
                         (ERASED_TEXT, blank(json.dumps(body), [*hunted, said]), r["receipt_id"]))
            conn.execute("UPDATE recall_feedback SET query=? WHERE receipt_id=?", (ERASED_TEXT, r["receipt_id"]))
            changed += 1
    return changed


def _erase_graph(conn: apsw.Connection, ids: list[str], anchors: set) -> tuple[int, int]:
    """The edges it asserted go (they closed when it was deleted, and said what it said), and then
    every anchor nothing else points to: a topic named by its words, a person only it named."""
    edges = 0
    for memory in ids:
        for e in rows(conn, "SELECT edge_id, from_anchor_id, to_anchor_id FROM memory_edges WHERE asserted_by=?",
                      (memory,)):
            anchors.update((e["from_anchor_id"], e["to_anchor_id"]))
            conn.execute("DELETE FROM memory_edges WHERE edge_id=?", (e["edge_id"],))
            edges += 1
    gone = 0
    for anchor_id in sorted(a for a in anchors if a):
        used = scalar(conn, "SELECT EXISTS (SELECT 1 FROM memory_documents WHERE anchor_id=?1)"
                            " OR EXISTS (SELECT 1 FROM memory_records WHERE anchor_id=?1)"
                            " OR EXISTS (SELECT 1 FROM memory_edges WHERE from_anchor_id=?1 OR to_anchor_id=?1)"
                            " OR EXISTS (SELECT 1 FROM anchor_merges WHERE from_anchor_id=?1 OR into_anchor_id=?1)",
                      (anchor_id,))
        if not used:
            conn.execute("DELETE FROM anchor_aliases WHERE anchor_id=?", (anchor_id,))
            conn.execute("DELETE FROM memory_anchors WHERE anchor_id=?", (anchor_id,))
            gone += 1
    return edges, gone


__all__ = ["NOTHING_TO_RESTORE", "erase", "erased_at", "restore_unless_erased"]
