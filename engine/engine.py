"""The Engine: the one object the API, CLI, UI and tray talk to.

`open_engine(home)` connects, migrates, starts the writer (and background workers) and returns
an Engine. Reads run on the calling thread's own connection; writes go to the writer thread.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from . import search, sessions, store
from .clock import Clock, system_clock
from .db import Database, rows, scalar
from .errors import EngineError, InvalidInput, MemoryDisabled, ScopeError
from .memory import MemoryItem, Provenance, clean_terms, parse_id
from .migrations import migrate
from .models import attach as attach_models
from .recall import attach as attach_recall
from .policy import Scope, check_readable, write_scope
from .settings import Settings, load as load_settings
from .writepath import attach as attach_write_path, intake

log = logging.getLogger("keepmind.engine")
DB_NAME = "keepmind.db"
SETTINGS_NAME = "keepmind.json"


class Worker(Protocol):
    """A background worker the engine starts and stops (curation, observer, model loading...)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class StoreResult:
    id: str | None
    action: str  # "created" | "duplicate" | "tombstoned" | "queued" | ...
    reason: str = ""
    checkpoint_id: str | None = None


@dataclass(frozen=True)
class UpdateResult:
    id: str
    action: str  # "replaced" | "rewritten" | "superseded" | "deleted"
    new_id: str | None = None
    replacements: int = 0
    revision: int | None = None


class Engine:
    def __init__(self, home: Path, db: Database, settings: Settings, clock: Clock):
        self.home = Path(home)
        self.db = db
        self.settings = settings
        self.clock = clock
        self.started_at = clock()
        self._workers: list[Worker] = []
        self._write_listeners: list[Callable[[list[str]], None]] = []
        self._status_hooks: list[Callable[[], list[str]]] = []
        self.models: Any = None  # engine.models.ModelRuntime, attached by open_engine
        self.recaller: Any = None  # engine.recall.Recaller, attached by open_engine
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
        return self.db.write(fn, *args, **kwargs)

    @property
    def enabled(self) -> bool:
        return bool(self.settings["memory.enabled"])

    def _require_enabled(self) -> None:
        if not self.enabled:
            raise MemoryDisabled(
                "memory is turned off (memory.enabled = false in keepmind.json); "
                "turn it on to use the memory tools"
            )

    def scope(self, session_or_scope: str | Scope) -> Scope:
        """The scope of a session id (or a Scope passed through)."""
        if isinstance(session_or_scope, Scope):
            return session_or_scope
        with self.db.snapshot() as conn:
            row = sessions.session_row(conn, session_or_scope)
        extra = tuple(self.settings["policy.cross_boundary_reads"].get(row["boundary"], ()))
        return sessions.scope_of(row, extra)

    # -- sessions ----------------------------------------------------------------------------

    def open_session(self, audience: str, boundary: str, *, channel: str | None = None,
                     title: str | None = None, token_id: str | None = None) -> str:
        return self.write(sessions.open_session, audience, boundary, self.now(), channel=channel,
                          title=title, token_id=token_id)

    def add_turn(self, session_id: str, *, user: str = "", assistant: str = "", tools=None,
                 recalled_ids=None, skills=None) -> int:
        """Persist a completed turn (secret values redacted first) and let the observer know."""
        index = self.write(sessions.add_turn, session_id, self.now(), user=intake.redact_turn_text(user),
                           assistant=intake.redact_turn_text(assistant), tools=tools,
                           recalled_ids=recalled_ids, skills=skills)
        self._wake_observer()
        return index

    def end_session(self, session_id: str) -> None:
        self.write(sessions.end_session, session_id, self.now())
        self._wake_observer()

    def _wake_observer(self) -> None:
        writepath = getattr(self, "writepath", None)
        if writepath is not None:
            writepath.wake_observer()

    # -- the write path (queued; curation decides) ---------------------------------------------

    def store_memory(self, session_or_scope: str | Scope, title: str, content: str,
                     tags=None) -> StoreResult:
        """Queue an explicit memory (priority 100); StoreResult(action="queued", checkpoint_id)."""
        return intake.store_memory(self, session_or_scope, title, content, tags)

    def compact(self, session_id: str, summary: str) -> StoreResult:
        """Queue a compaction summary (priority 90), kept as evidence recalled only on request."""
        return intake.compact(self, session_id, summary)

    def add_findings(self, session_id: str, findings: list) -> list[StoreResult]:
        """Queue subagent findings the parent accepted, as evidence."""
        return intake.add_findings(self, session_id, findings)

    # -- explicit verbs ----------------------------------------------------------------------

    def find(self, scope: str | Scope, query: str, *, limit: int = 5, include_expired: bool = False,
             include_trace: bool = False) -> list[MemoryItem]:
        """FTS5 over the memories this scope may see, best match first."""
        self._require_enabled()
        scope = self.scope(scope)
        check_readable(scope)
        with self.db.snapshot() as conn:
            return search.find(conn, scope, query, self.now(), limit=limit,
                               include_expired=include_expired, include_trace=include_trace)

    def get(self, scope: str | Scope, ids) -> search.GetResult:
        """Memories by id, copied verbatim; a record id resolves to the newest of its chain."""
        self._require_enabled()
        scope = self.scope(scope)
        check_readable(scope)
        with self.db.snapshot() as conn:
            return search.get(conn, scope, ids, self.now())

    def list_memories(self, scope: str | Scope, *, limit: int = 50, offset: int = 0) -> list[MemoryItem]:
        scope = self.scope(scope)
        check_readable(scope)
        with self.db.snapshot() as conn:
            return search.list_visible(conn, scope, self.now(), limit=limit, offset=offset)

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
        memory_id = self.write(store.insert_memory, draft, self.now())
        self.notify_written([memory_id])
        return StoreResult(memory_id, "created")

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
        mode = _update_mode(old_text, new_text, new_content, title, delete)
        result = self.write(_apply_update, scope, memory_id, mode, old_text, new_text, new_content,
                            title, reason, source, self.now())
        self.notify_written([memory_id, result.new_id])
        return result

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

    def recall(self, session_id: str, message: str, context=None):
        """The memories that bear on `message`, as a `[memory-recall]` block (usually none)."""
        return self.recaller.recall(session_id, message, context)

    def explain(self, receipt_id: str) -> dict:
        """The receipt of one recall: what was considered, scored, injected and dropped, and why."""
        return self.recaller.explain(receipt_id)

    # -- observability -----------------------------------------------------------------------

    def stats(self) -> dict:
        with self.db.snapshot() as conn:
            return {
                "anchors": scalar(conn, "SELECT COUNT(*) FROM memory_anchors WHERE status='active'"),
                "documents": scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE deleted_at IS NULL"),
                "records": scalar(
                    conn,
                    "SELECT COUNT(*) FROM memory_records r WHERE r.is_tombstone=0 AND NOT EXISTS"
                    " (SELECT 1 FROM memory_records s WHERE s.supersedes_record_id=r.record_id)"),
                "edges": scalar(conn, "SELECT COUNT(*) FROM memory_edges WHERE valid_to IS NULL"),
                "pending_checkpoints": scalar(
                    conn, "SELECT COUNT(*) FROM memory_checkpoints WHERE status IN ('pending','leased')"),
                "formed_since_start": scalar(
                    conn,
                    "SELECT (SELECT COUNT(*) FROM memory_documents WHERE created_at >= ?)"
                    " + (SELECT COUNT(*) FROM memory_records WHERE created_at >= ? AND is_tombstone=0)",
                    (self.started_at, self.started_at)),
                "recalled_since_start": scalar(
                    conn, "SELECT COALESCE(SUM(injected_count), 0) FROM recall_events WHERE created_at >= ?",
                    (self.started_at,)),
            }

    def checkpoint_overview(self, limit: int = 50) -> dict:
        """Checkpoint counts by state and the pending list (oldest first within priority)."""
        with self.db.snapshot() as conn:
            counts = {state: 0 for state in ("pending", "leased", "completed", "dead")}
            for row in conn.execute("SELECT status, COUNT(*) FROM memory_checkpoints GROUP BY status"):
                counts[row[0]] = row[1]
            pending = rows(
                conn,
                "SELECT checkpoint_id, session_id, trigger_type, priority, status, attempts, last_error,"
                " audience, boundary, created_at, available_at FROM memory_checkpoints"
                " WHERE status IN ('pending', 'leased') ORDER BY priority DESC, created_at ASC LIMIT ?",
                (limit,),
            )
        return {"counts": counts, "pending": pending}

    def status(self) -> dict:
        """Health of the memory subsystem: healthy, degraded or paused, with reasons."""
        reasons: list[str] = []
        if not self.enabled:
            return {"status": "paused", "reasons": ["memory.enabled is false"]}
        try:
            with self.db.snapshot() as conn:
                scalar(conn, "SELECT COUNT(*) FROM _migrations")
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


def _update_mode(old_text, new_text, new_content, title, delete) -> str:
    if delete:
        if any(v is not None for v in (old_text, new_text, new_content)):
            raise InvalidInput("delete cannot be combined with old_text, new_text or new_content")
        return "delete"
    if new_content is not None:
        if old_text is not None or new_text is not None:
            raise InvalidInput("use either new_content (full rewrite) or old_text + new_text, not both")
        if not isinstance(new_content, str) or not new_content.strip():
            raise InvalidInput("new_content is empty: to remove a memory, use delete")
        return "rewrite"
    if old_text is not None or new_text is not None:
        if not isinstance(old_text, str) or not old_text:
            raise InvalidInput("old_text is empty: give the exact text to replace")
        if not isinstance(new_text, str):
            raise InvalidInput("new_text is missing: give the replacement text (it may be empty)")
        return "replace"
    if title is not None:
        return "retitle"
    raise InvalidInput("nothing to update: give new_content, old_text and new_text, title, or delete")


def _apply_update(conn, scope: Scope, memory_id: str, mode: str, old_text, new_text, new_content,
                  title, reason: str, source: str, now: int) -> UpdateResult:
    row = store.load_visible(conn, scope, memory_id, now)
    if mode == "delete":
        store.delete_memory(conn, row, now, reason=reason, source=source)
        return UpdateResult(row["id"], "deleted")
    new_title = title if title is not None else row["title"]
    if mode == "replace":
        count = row["body"].count(old_text)
        if count == 0:
            raise InvalidInput("old_text was not found in the memory: copy it exactly (case matters)")
        body = row["body"].replace(old_text, new_text)
    elif mode == "rewrite":
        count, body = 0, new_content
    else:
        count, body = 0, row["body"]
    if row["kind"] == "document":
        revision = store.revise_document(conn, row, new_title, body, now, source=source, reason=mode)
        return UpdateResult(row["id"], {"replace": "replaced", "rewrite": "rewritten",
                                        "retitle": "retitled"}[mode], replacements=count,
                            revision=revision)
    new = store.supersede_record(conn, row, new_title, body, now, source=source)
    return UpdateResult(row["id"], "superseded", new_id=new, replacements=count)


def open_engine(home: str | Path, *, settings: Settings | None = None, clock: Clock | None = None,
                start_workers: bool = True, llm_api_key: str | None = None) -> Engine:
    """Open (creating if needed) the Keepmind store in `home` and return a running Engine.

    `llm_api_key` is the write path's provider key, read by the composition root from the
    environment variable that `memory.llm.api_key_env` names.
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
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
    # Subsystems attach here, each in one line, as they land (models, recall, write path).
    engine.models = attach_models(engine, start=start_workers)
    engine.recaller = attach_recall(engine, start=start_workers)
    attach_write_path(engine, llm_api_key=llm_api_key, start=start_workers)
    return engine


__all__ = ["Engine", "EngineError", "StoreResult", "UpdateResult", "open_engine"]
