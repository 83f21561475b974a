"""The Engine: the one object the API, CLI, UI and tray talk to.

`open_engine(home)` connects, migrates, starts the writer (and background workers) and returns
an Engine. Reads run on the calling thread's own connection; writes go to the writer thread.

This module holds the memory verbs (sessions, the write path's ways in, find/get/store/update,
recall), pause, health and the lifecycle. Two mixins hold the rest of the facade, by reason to
change: browsing.py (tokens, listings, the graph, browsing and correcting, as people do) and
operations.py (running Keepmind: backlog and review, scoping, receipts, models, settings, export
and import).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from . import bearing, edit, overview, private, search, sessions, state, store
from .browsing import Browsing
from .checks import Check
from .clock import Clock, iso, system_clock
from .db import Database
from .errors import InvalidInput, MemoryDisabled, NotFound, ScopeError, SecretBlocked
from .jobs import Jobs
from .memory import MemoryItem, Provenance, clean_terms, parse_id
from .migrations import migrate
from .models import ModelRuntime
from .models import attach as attach_models
from .operations import Operations, permission
from .policy import Scope, check_name, check_readable, session_scope, write_scope
from .recall import Recaller, RecallResult
from .recall import attach as attach_recall
from .recall.candidates import RECALL_MODES
from .recall.inject import Injected, render_item
from .results import StoreResult, UpdateResult
from .secretfilter import refused_in_words
from .settings import FILE_NAME as SETTINGS_FILE
from .settings import Settings
from .settings import load as load_settings
from .tokens import Token, require_permits
from .writepath import WritePath, handwritten, intake
from .writepath import attach as attach_write_path
from .writepath.events import record_event

log = logging.getLogger("keepmind.engine")
DB_NAME = "keepmind.db"
SETTINGS_NAME = SETTINGS_FILE


class Worker(Protocol):
    """A background worker the engine starts and stops (curation, observer, model loading...)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class Engine(Browsing, Operations):
    """The facade: every verb, listing and lifecycle call the API, CLI, UI and tray make.

    Subsystems are attached by `open_engine` (models, recall, the write path); the outer layers
    never reach past these methods into the engine's modules or its database.
    """

    models: ModelRuntime
    recaller: Recaller
    writepath: WritePath

    def __init__(self, home: Path, db: Database, settings: Settings, clock: Clock):
        self.home = Path(home).absolute()  # a relative --home is not read against another folder later
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

        Returns the turn's 1-based index, or 0 when nothing is recorded: memory is paused, or the
        session is public (inert: no read, no write, not even its conversation)."""
        if self.paused or self.scope(session_id).inert:  # a bad id is still an error
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

    def _not_ended(self, session_or_scope: str | Scope) -> None:
        """An ended session takes nothing more, in the words a turn is refused with (a client that
        knows them, like the Claude Code hook, opens a new session)."""
        sid = session_or_scope if isinstance(session_or_scope, str) else session_or_scope.session_id
        if sid and self.session(sid)["status"] == "ended":
            raise InvalidInput(f"session {sid} has ended: open a new session")

    def _writable(self, session_or_scope: str | Scope) -> Scope:
        self._require_enabled()
        self._not_ended(session_or_scope)
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
        result = self._queued(intake.store_memory(self.db, scope, self.now(), title, content, tags))
        if result.action == "queued" and (too_long := self.beyond_injection(title, content)):
            result = replace(result, reason=f"{result.reason}; {too_long}: find_memories and get_memories read it "
                                            "whole; store shorter facts for recall to bring up")
        return result

    def write_by_hand(self, scope: str | Scope, title: str, content: str, *, memory_class: str = "durable_fact",
                      anchor: str | None = None, source: str = "ui") -> StoreResult:
        """A memory a person writes (the browser's Write a memory), stored at once as `store` does,
        after the checks curation makes of what an agent stores (writepath/handwritten.py): a claim
        deleted as wrong is refused when this says it whole or close in meaning, not only word for
        word; without an anchor it hangs on whom or what it is about, and the ties it names feed the
        graph. A memory longer than recall injects is kept, and its reason says so. While memory is
        paused nothing is written ("paused"), as store_memory keeps nothing then."""
        self._require_enabled()
        self._not_ended(scope)
        scope = self.scope(scope)
        if (paused := self._paused_result()) is not None:  # nothing new is kept, by hand or by an agent
            return paused
        if handwritten.deleted_claim(self, scope, title, content) is not None:
            return StoreResult(None, "tombstoned", reason="this claim was deleted as wrong; restore it to keep it")
        anchor_name, anchor_type, relations = handwritten.graph_of(content, anchor)
        result = self.store(scope, title, content, memory_class=memory_class, anchor=anchor_name,
                            anchor_type=anchor_type, relations=relations, source=source)
        if result.action == "created" and (too_long := self.beyond_injection(title, content)):
            result = replace(result, reason=too_long)
        return result

    def beyond_injection(self, title: str, content: str) -> str | None:
        """Why recall will never inject this memory whole (it injects whole memories only), or None."""
        budget = int(self.settings["memory.recall.max_injected_chars"])
        text = content if isinstance(content, str) else ""
        size = len(render_item(Injected("doc-" + "0" * 32, (title or "") if isinstance(title, str) else "",
                                        text.strip(), "durable_fact", 1.0, self.now())))
        if size <= budget:
            return None
        return (f"at {len(text.strip()):,} characters it is longer than recall injects ({budget:,} characters "
                "with its title and id)")

    def recalled_for(self, item: MemoryItem) -> str | None:
        """The tasks recall gives this memory to whatever their words (bearing.py), in words, or None."""
        if item.kind != "document" or item.recall_mode not in RECALL_MODES:
            return None
        return bearing.TASKS.get(bearing.bears_on(item.body))

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
        """FTS5 over the memories this scope may see, best match first; fewer than `limit` found by
        their words are topped up by meaning, above the embedder's cosine floor, when an embedder is
        loaded ("allergies" finds "I am allergic to peanuts.": the two stem apart)."""
        self._require_enabled()
        scope = self.scope(scope)
        check_readable(scope)
        found = self._read(search.find, scope, query, self.now(), limit=limit,
                           include_expired=include_expired, include_trace=include_trace)
        if len(found) < limit and self.settings["memory.embeddings.enabled"] and self.models.embedder() is not None:
            seen = {i.id for i in found}
            found += [i for i in self.search_memories(scope, query, limit=limit)
                      if i.id not in seen and (include_trace or i.memory_class != "trace")][:limit - len(found)]
        return found

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
        """Write a memory in the session's scope (or narrower) through `store.insert_unless_known`: a
        claim deleted as wrong there is refused ("tombstoned", until the tombstone is lifted) and one a
        live memory already says word for word is not written twice ("duplicate", with its id)."""
        self._require_enabled()
        self._not_ended(scope)
        scope = self.scope(scope)
        draft = self.draft(scope, title, content, memory_class=memory_class, audience=audience,
                           aliases=aliases, facets=(*clean_terms(facets, "facets"),
                                                    *clean_terms(tags, "tags")),
                           anchor=anchor, anchor_type=anchor_type, relations=relations,
                           provenance=provenance, authored_at=authored_at, source=source,
                           confidence=confidence)
        try:
            memory_id, action = self.write(store.insert_unless_known, draft, self.now())
        except SecretBlocked as exc:
            return StoreResult(None, "blocked", reason=self._blocked(scope, exc, "store"))
        if action == "tombstoned":
            return StoreResult(None, action, reason="this claim was deleted as wrong; restore it to keep it")
        if action == "duplicate":
            return StoreResult(memory_id, action, reason="a memory already says this word for word")
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
        self._not_ended(scope)
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
        return refused_in_words(exc.kinds)

    def revisions(self, scope: str | Scope, memory_id: str) -> list[dict]:
        """Every body a living document has had, newest first."""
        scope = self.scope(scope)
        check_readable(scope)
        with self.db.snapshot() as conn:
            item = search.get_one(conn, scope, parse_id(memory_id), self.now())
            if item.kind != "document":
                return []
            return store.revisions(conn, item.id)

    def superseded(self, scope: str | Scope, memory_id: str) -> list[dict]:
        """The records a record superseded, newest first ({id, title, body, created_at, source}): what
        its page shows of what it replaced (a document has revisions instead; none for it)."""
        scope = self.scope(scope)
        check_readable(scope)
        with self.db.snapshot() as conn:
            item = search.get_one(conn, scope, parse_id(memory_id), self.now())
            if item.kind != "record":
                return []
            return store.earlier_records(conn, item.id)

    # -- recall (engine/recall) ----------------------------------------------------------------

    def recall(self, session_id: str, message: str, context=None, *,
               token: Token | None = None) -> RecallResult:
        """The memories that bear on `message`, as a `[memory-recall]` block (usually none).

        With `token`, the session must be one the token may act in, and recall refuses when the
        session's cross-boundary policy reaches a boundary the token may not see.
        """
        if token is not None:
            _refuse_withheld(self.scope(session_id, token=token))
        self._not_ended(session_id)
        if self.paused:
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
        # One answer for a receipt that is not there and one the caller may not see, so that no
        # caller learns a receipt exists in a session beyond it.
        where = f" in session {session_id}" if session_id is not None else ""
        absent = NotFound(f"no recall receipt {receipt_id}{where}: it may have been pruned "
                          "(memory.recall.receipt_retention_days)")
        try:
            receipt = self.recaller.explain(receipt_id)
        except NotFound:
            raise absent from None
        owner = receipt.get("session_id") if isinstance(receipt, dict) else None
        if session_id is not None and owner != session_id:
            raise absent
        if token is not None and session_id is None:
            try:
                scope = self.scope(owner, token=token) if owner is not None else None
            except NotFound:
                scope = None  # never name the session of a receipt the token may not see
            if scope is None:
                raise absent
            _refuse_withheld(scope)
        return receipt

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
        ceiling, bounds = permission(token)
        return self._read(overview.checkpoint_overview, limit=limit, ceiling=ceiling, boundaries=bounds)

    def checkpoint(self, checkpoint_id: str, *, token: Token | None = None) -> dict:
        """One checkpoint's state and, once curated, the memories it formed (NotFound beyond the token)."""
        ceiling, bounds = permission(token)
        found = self._read(overview.checkpoint, checkpoint_id, ceiling=ceiling, boundaries=bounds)
        if found is None:
            # the id is not echoed: a token asking for another scope's checkpoint learns nothing
            raise NotFound("no such checkpoint: list them with `keepmind checkpoints list` "
                           "(store_memory's answer gives each one's id)")
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
        if self.db.write_failure:
            reasons.append(self.db.write_failure)
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
    # The dir's own mode is narrowed without a word (a folder made by `mkdir` is 0755, and its
    # files are what others could read); its files made before modes were kept owner-only are said.
    home = private.make_private_dir(Path(home))
    repaired = private.repair(home)
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
