"""The write path's ways in: explicit store_memory, compaction summaries, subagent findings.

Each validates its input (an EngineError that says what to fix), then queues one checkpoint per
memory and returns at once; curation decides later. A payload holding a secret is not queued at
all: the result says "blocked" and only an audit event remains.

They take values (the database to write through, a writable scope, the time), not the engine:
`Engine` checks that memory is on, resolves the scope and wakes curation afterwards.
"""

from __future__ import annotations

from ..clock import iso
from ..errors import InvalidInput
from ..memory import MAX_BODY_CHARS, MAX_TITLE_CHARS, clean_terms, clean_text
from ..results import StoreResult
from ..secretfilter import refused_in_words
from ..sessions import mark_compacted
from . import checkpoints, extractor
from .proposals import Proposal

MAX_FINDINGS = 50


def _queue(db, scope, now: int, trigger: str, proposal: Proposal, source: str,
           extra: dict | None = None) -> StoreResult:
    payload = {"proposal": proposal.to_payload(), "source": source,
               "provenance": {"session_id": scope.session_id, "turns": [], "external": []},
               **(extra or {})}
    queued = db.write(checkpoints.enqueue, trigger=trigger, payload=payload, audience=scope.audience,
                      boundary=scope.boundary, session_id=scope.session_id, now=now)
    if queued.blocked:
        return StoreResult(None, "blocked", reason=refused_in_words(queued.blocked_kinds))
    return StoreResult(None, "queued", reason=trigger, checkpoint_id=queued.checkpoint_id)


def store_memory(db, scope, now: int, title, content, tags=None) -> StoreResult:
    """Queue an explicit memory (priority 100): a durable fact whose living document is its title."""
    title = clean_text(title, "title", limit=MAX_TITLE_CHARS, required=False)
    content = clean_text(content, "content", limit=MAX_BODY_CHARS)
    if sum(c.isalnum() for c in content) < 2:  # a stray "x" or "?" was kept, and came up in searches
        raise InvalidInput(f"content {content!r} says nothing to remember: store the fact in words "
                           "(\"The user prefers window seats.\")")
    tags = clean_terms(tags, "tags")
    # The people, places and organisations it names feed the graph as the observer's do ("My
    # sister Anna lives in Lisbon.": Anna, sister of the user, lives in Lisbon; a later "Anna moved
    # to Porto." closes that edge). Without a title it hangs on what it is about, as observed.
    ties, about = extractor.ties_of(content)
    about = about if not title else None
    proposal = Proposal(
        memory_class="durable_fact", title=title, content=content,
        anchor=title or (about.name if about else None), anchor_type=about.kind if about else "topic",
        aliases=(title,) if title else (), facets=tuple(tags), confidence=0.95,
        relations=ties, subject_kind="user", explicit=True,
    )
    return _queue(db, scope, now, "explicit-memory-request", proposal, "tool")


def compact(db, scope, now: int, summary) -> StoreResult:
    """Queue a compaction summary (priority 90): evidence recalled only on request (manual)."""
    summary = clean_text(summary, "summary", limit=MAX_BODY_CHARS)
    if scope.session_id:
        db.write(mark_compacted, scope.session_id, now)
    proposal = Proposal(
        memory_class="evidence", title=f"Session summary {iso(now)[:10]}", content=summary,
        anchor=None, facets=("compaction",), confidence=0.9, subject_kind="session", explicit=True,
    )
    return _queue(db, scope, now, "compaction-boundary", proposal, "compaction", {"recall_mode": "manual"})


def _finding(raw, index: int) -> Proposal:
    if isinstance(raw, str):
        raw = {"content": raw}
    if not isinstance(raw, dict):
        raise InvalidInput(f"finding {index} must be a string or an object with title and content")
    content = clean_text(raw.get("content"), f"finding {index} content", limit=MAX_BODY_CHARS)
    title = clean_text(raw.get("title"), f"finding {index} title", limit=MAX_TITLE_CHARS, required=False)
    tags = clean_terms(raw.get("tags") or raw.get("facets"), f"finding {index} tags")
    return Proposal(memory_class="evidence", title=title, content=content, anchor=None,
                    facets=("subagent-finding", *tags), confidence=0.85, subject_kind="agent", explicit=True)


def add_findings(db, scope, now: int, findings) -> list[StoreResult]:
    """Queue subagent findings the parent accepted, as evidence (one checkpoint each)."""
    if not isinstance(findings, (list, tuple)) or not findings:
        raise InvalidInput("findings must be a non-empty list of strings or {title, content} objects")
    if len(findings) > MAX_FINDINGS:
        raise InvalidInput(f"at most {MAX_FINDINGS} findings per call")
    proposals = [_finding(f, i) for i, f in enumerate(findings, 1)]  # validate all before queueing any
    return [_queue(db, scope, now, "subagent-findings", p, "subagent") for p in proposals]
