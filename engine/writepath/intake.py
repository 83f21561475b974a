"""The write path's ways in: explicit store_memory, compaction summaries, subagent findings.

Each validates its input (an EngineError that says what to fix), then queues one checkpoint per
memory and returns at once; curation decides later. A payload holding a secret is not queued at
all: the result says "blocked" and only an audit event remains.
"""

from __future__ import annotations

from ..clock import iso
from ..errors import InvalidInput
from ..memory import MAX_BODY_CHARS, MAX_TITLE_CHARS, clean_terms, clean_text
from ..policy import write_scope
from ..sessions import mark_compacted
from . import checkpoints
from .proposals import Proposal
from .secrets import redact

MAX_FINDINGS = 50


def _queue(engine, scope, trigger: str, proposal: Proposal, source: str, extra: dict | None = None):
    from ..engine import StoreResult  # the engine's result type (engine.py imports this package)

    payload = {"proposal": proposal.to_payload(), "source": source,
               "provenance": {"session_id": scope.session_id, "turns": [], "external": []},
               **(extra or {})}
    queued = engine.write(checkpoints.enqueue, trigger=trigger, payload=payload, audience=scope.audience,
                          boundary=scope.boundary, session_id=scope.session_id, now=engine.now())
    if queued.blocked:
        return StoreResult(None, "blocked", reason="secret-like content is never stored ("
                           + ", ".join(queued.blocked_kinds) + ")")
    wp = getattr(engine, "writepath", None)
    if wp is not None:
        wp.curation.wake()
    return StoreResult(None, "queued", reason=trigger, checkpoint_id=queued.checkpoint_id)


def _writable_scope(engine, session_or_scope):
    engine._require_enabled()
    scope = engine.scope(session_or_scope)
    write_scope(scope)  # public sessions write nothing (ScopeError)
    return scope


def store_memory(engine, session_or_scope, title, content, tags=None):
    """Queue an explicit memory (priority 100): a durable fact whose living document is its title."""
    scope = _writable_scope(engine, session_or_scope)
    title = clean_text(title, "title", limit=MAX_TITLE_CHARS, required=False)
    content = clean_text(content, "content", limit=MAX_BODY_CHARS)
    tags = clean_terms(tags, "tags")
    proposal = Proposal(
        memory_class="durable_fact", title=title, content=content, anchor=title or None,
        anchor_type="topic", aliases=(title,) if title else (), facets=tuple(tags), confidence=0.95,
        subject_kind="user", explicit=True,
    )
    return _queue(engine, scope, "explicit-memory-request", proposal, "tool")


def compact(engine, session_id, summary):
    """Queue a compaction summary (priority 90): evidence recalled only on request (manual)."""
    scope = _writable_scope(engine, session_id)
    summary = clean_text(summary, "summary", limit=MAX_BODY_CHARS)
    if scope.session_id:
        engine.write(mark_compacted, scope.session_id, engine.now())
    proposal = Proposal(
        memory_class="evidence", title=f"Session summary {iso(engine.now())[:10]}", content=summary,
        anchor=None, facets=("compaction",), confidence=0.9, subject_kind="session", explicit=True,
    )
    return _queue(engine, scope, "compaction-boundary", proposal, "compaction", {"recall_mode": "manual"})


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


def add_findings(engine, session_id, findings) -> list:
    """Queue subagent findings the parent accepted, as evidence (one checkpoint each)."""
    scope = _writable_scope(engine, session_id)
    if not isinstance(findings, (list, tuple)) or not findings:
        raise InvalidInput("findings must be a non-empty list of strings or {title, content} objects")
    if len(findings) > MAX_FINDINGS:
        raise InvalidInput(f"at most {MAX_FINDINGS} findings per call")
    proposals = [_finding(f, i) for i, f in enumerate(findings, 1)]  # validate all before queueing any
    return [_queue(engine, scope, "subagent-findings", p, "subagent") for p in proposals]


def redact_turn_text(text):
    """A turn's text with secret values replaced, before it is persisted."""
    if not isinstance(text, str) or not text:
        return text
    return redact(text)[0]
