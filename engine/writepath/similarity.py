"""Similarity for curation: the proposal's vector, nominees, and near-matches of tombstones.

Similarity only nominates: it never merges or skips on its own (netclaw measured a 91% near-dup
escape rate and 27% wrong merges, netclaw-facts §4, §10). The one exception is a tombstone: a
proposal nearly identical (cosine >= memory.curation.tombstone_cosine) to a memory a person
deleted as wrong is refused, so a reworded claim cannot come back the next day either.
Without an embedder everything here degrades quietly (lexical nominees only when an LLM will
look at them; tombstones by exact fingerprint only).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import apsw
import numpy as np

from .. import search
from ..db import one, rows
from ..memory import content_hash
from ..policy import Scope
from ..stance import negated
from .checkpoints import Lease
from .mergeguard import CJK_RE, contains_statement, unsaid
from .proposals import Proposal

LEXICAL_NOMINEE_OVERLAP = 0.5
# (tombstone id, content hash of one of its wordings, model id) -> vector
_tombstone_cache: dict[tuple[str, str, str], np.ndarray] = {}
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class Embedded:
    vector: np.ndarray | None
    model_id: str | None
    error: str | None = None


def _passage(engine, title: str, body: str) -> str:
    text_of = getattr(engine.models, "passage_text", None)
    return text_of(title, body) if text_of else f"{title}\n{body}".strip()


def _embedder(engine):
    models = engine.models
    try:
        return (models.embedder(), models.vectors()) if models is not None else (None, None)
    except Exception:  # noqa: BLE001 - a broken model runtime means no similarity, never a failure
        return None, None


def embed_proposal(engine, proposal: Proposal) -> Embedded:
    """The proposal as a passage vector under the active embedder (None without one)."""
    return embed_text(engine, proposal.title, proposal.content)


def embed_text(engine, title: str, content: str) -> Embedded:
    """A memory's title and text as a passage vector under the active embedder (None without one)."""
    embedder, _ = _embedder(engine)
    if embedder is None:
        return Embedded(None, None)
    try:
        vec = embedder.embed_passages([_passage(engine, title, content)])[0]
        return Embedded(np.asarray(vec, dtype=np.float32), embedder.model_id)
    except Exception as exc:  # noqa: BLE001
        return Embedded(None, None, str(exc)[:200])


def _word_overlap(a: str, b: str) -> float:
    sa, sb = set(search.query_terms(a, limit=200)), set(search.query_terms(b, limit=200))
    return len(sa & sb) / len(sa | sb) if sa and sb else 0.0


def nominate(engine, conn: apsw.Connection, lease: Lease, proposal: Proposal, now: int,
             embedded: Embedded, allow_lexical: bool) -> tuple[list[dict], dict]:
    """Visible durable documents of the same scope similar to the proposal (cosine >= threshold)."""
    threshold = float(engine.settings["memory.curation.nominator_threshold"])
    k = int(engine.settings["memory.curation.nominator_k"])
    scope = Scope(lease.audience, lease.boundary, lease.session_id)
    info: dict = {"nominator_error": embedded.error} if embedded.error else {}
    hits: list[tuple[str, float | None]] = []
    _, vectors = _embedder(engine)
    if embedded.vector is not None and vectors is not None:
        try:
            hits = [(i, float(c)) for i, c in vectors.search(embedded.vector, k * 4, min_cosine=threshold,
                                                              places=[(lease.audience, lease.boundary)], now=now)
                    if str(i).startswith("doc-") and c >= threshold]
            info["nominated_by"] = "vector"
        except Exception as exc:  # noqa: BLE001
            info["nominator_error"] = str(exc)[:200]
    if "nominated_by" not in info:
        info["nominator_degraded"] = True
        if allow_lexical:
            terms = [t for t in search.query_terms(proposal.content) if len(t) >= 3][:8]
            for row, _score in search.lexical_candidates(conn, scope, terms, now, k * 2):
                overlap = _word_overlap(row["body"], proposal.content)
                if row["id"].startswith("doc-") and overlap >= LEXICAL_NOMINEE_OVERLAP:
                    hits.append((row["id"], None))
            info["nominated_by"] = "lexical"
    found = search.hydrate_visible(conn, scope, [h[0] for h in hits], now)
    out = []
    for memory_id, cosine in hits:
        row = found.get(memory_id)
        if row is None or row["memory_class"] != "durable_fact":
            continue
        if row["audience"] != lease.audience or row["boundary"] != lease.boundary:
            continue  # never fold a memory into one with a different audience
        out.append({"id": memory_id, "title": row["title"], "body": row["body"],
                    "revision": row["revision"], "updated_at": row["updated_at"],
                    "anchor": None, "cosine": cosine})
        if len(out) >= k:
            break
    if out:
        info["top_cosine"] = max((c["cosine"] or 0.0) for c in out)
    return out, info


# The full-text index drives this query (CROSS JOIN keeps it the outer loop). Left to the planner,
# statistics gathered while the store was small (apsw runs `PRAGMA optimize` when a connection
# opens: a few memories, all in one scope) made it walk every document of the scope and run the
# full-text query once for each: a 400-bullet Markdown import took minutes instead of seconds.
_SAID_SQL = (
    "SELECT d.document_id, d.body FROM memory_documents_fts f CROSS JOIN memory_documents d ON d.rowid = f.rowid"
    " WHERE memory_documents_fts MATCH ? AND d.deleted_at IS NULL AND d.memory_class = 'durable_fact'"
    " AND d.audience = ? AND d.boundary = ? AND (d.expires_at IS NULL OR d.expires_at > ?)")


def said_query(content: str) -> str | None:
    """The MATCH expression for the documents that may say `content` word for word: its words as
    one phrase in the body column (the index splits and stems them as it did the bodies). Text in
    a script written without spaces, which contains_statement compares without word boundaries,
    is matched as it always was: every run of it, anywhere in the memory."""
    if CJK_RE.search(content):
        terms = search.query_terms(content, stopwords=frozenset())
        return " AND ".join('"' + t.replace('"', '""') + '"' for t in terms) or None
    words = re.findall(r"\w+", content.lower())
    # whose it is said in two ways ("my", "user's": mergeguard.contains_statement reads them alike):
    # the phrase starts after it, and contains_statement decides
    for lead in (["user", "s"], ["my"], ["i"], ["user"]):
        if words[:len(lead)] == lead and len(words) > len(lead):
            words = words[len(lead):]
            break
    return f'body : "{" ".join(words)}"' if words else None


def already_said(conn: apsw.Connection, lease: Lease, content: str, now: int) -> str | None:
    """A living document of exactly this scope whose body already says `content` (mergeguard's
    contains_statement: every word, in order), found by the full-text index without any model.
    Such a proposal adds nothing: "likes tea" when "likes tea and coffee" is stored.

    Every match of the scope is looked at until one says it (no LIMIT): which rows a limit let
    through would decide the answer."""
    match = said_query(content)
    if match is None:
        return None
    cursor = conn.execute(_SAID_SQL, (match, lease.audience, lease.boundary, now))
    try:
        return next((document_id for document_id, body in cursor if contains_statement(body, content)), None)
    finally:
        cursor.close()


# A tombstone of the scope that still refuses by its words: not lifted, not erased, naming a memory.
_STANDING = "audience=? AND boundary=? AND lifted_at IS NULL AND erased_at IS NULL AND memory_id IS NOT NULL"


def _tombstone_wordings(conn: apsw.Connection, lease: Lease | Scope) -> list[dict]:
    """Every wording of the memories deleted as wrong in the lease's scope whose text is kept: the
    last, and each earlier revision or record of its chain (it was wrong as first said too). An
    erased memory has no words left: only its fingerprints refuse the claim.

    Every proposal asks this: in the common case, a scope with no memory deleted as wrong, one
    indexed probe answers (25 us) instead of the recursive query (213 us)."""
    scope = (lease.audience, lease.boundary)
    if one(conn, f"SELECT 1 AS x FROM tombstones WHERE {_STANDING} LIMIT 1", scope) is None:
        return []
    return rows(
        conn,
        f"WITH RECURSIVE standing AS (SELECT tombstone_id, memory_id FROM tombstones WHERE {_STANDING}),"
        " chain(tombstone_id, memory_id, record_id) AS (SELECT tombstone_id, memory_id, memory_id FROM standing"
        " WHERE memory_id LIKE 'rec-%' UNION ALL SELECT c.tombstone_id, c.memory_id, r.supersedes_record_id"
        " FROM chain c JOIN memory_records r ON r.record_id = c.record_id WHERE r.supersedes_record_id IS NOT NULL)"
        " SELECT s.tombstone_id, s.memory_id, d.title, d.body FROM standing s"
        " JOIN memory_documents d ON d.document_id = s.memory_id"
        " UNION SELECT s.tombstone_id, s.memory_id, v.title, v.body FROM standing s"
        " JOIN memory_revisions v ON v.document_id = s.memory_id"
        " UNION SELECT c.tombstone_id, c.memory_id, r.title, r.body FROM chain c"
        " JOIN memory_records r ON r.record_id = c.record_id AND r.is_tombstone = 0",
        scope)


def tombstone_said(conn: apsw.Connection, lease: Lease | Scope, content: str) -> str | None:
    """The id of a memory deleted as wrong in scope whose claim `content` says, word for word, with
    more around it ("User's dog is a beagle named Rolo, he is 3." says the deleted "My dog is a
    beagle named Rolo."; mergeguard.contains_statement reads "my" and "User's" alike). Its negation
    is its correction, not the claim."""
    for t in _tombstone_wordings(conn, lease):
        body = t["body"] or ""
        if body.strip() and contains_statement(content, body) and negated(body) == negated(content):
            return t["memory_id"]
    return None


def tombstone_near(engine, conn: apsw.Connection, lease: Lease | Scope, embedded: Embedded,
                   content: str = "") -> tuple[str, float] | None:
    """(deleted memory id, cosine) of the closest tombstone in scope at or above the threshold that
    says the same claim, in any wording the memory had (_tombstone_wordings): one whose body lacks
    a number, date, name or identifier of `content` is another claim ("…on 17 June 2027 at 14:30…"
    after "…on 3 May 2027 at 10:00…" was deleted as wrong is the correction, however near its
    wording), and so is its negation ("I am not allergic to peanuts." after "I am allergic to
    peanuts.", cosine 0.96)."""
    if embedded.vector is None:
        return None
    found = _tombstone_wordings(conn, lease)
    if not found:
        return None
    for t in found:
        t["key"] = (t["tombstone_id"], content_hash(t["title"], t["body"]), embedded.model_id)
    embedder, _ = _embedder(engine)
    with _cache_lock:
        missing = list({t["key"]: t for t in found if t["key"] not in _tombstone_cache}.values())
    if missing:
        if embedder is None or embedder.model_id != embedded.model_id:
            return None
        vectors = embedder.embed_passages([_passage(engine, t["title"], t["body"]) for t in missing])
        with _cache_lock:
            for t, vec in zip(missing, vectors):
                _tombstone_cache[t["key"]] = np.asarray(vec, dtype=np.float32)
    threshold = float(engine.settings["memory.curation.tombstone_cosine"])
    best = None
    with _cache_lock:
        for t in found:
            cosine = float(_tombstone_cache[t["key"]] @ embedded.vector)
            if cosine >= threshold and (best is None or cosine > best[1]) and not unsaid([t["body"]], content) \
                    and negated(t["body"]) == negated(content):  # "…not allergic…" corrects "…allergic…"
                best = (t["memory_id"], cosine)
    return best
