"""Recall: inject only the memories that help, before every turn (the read path).

`Recaller` owns what recall keeps between turns (term statistics, the budget thread pool, the
degradation log, receipts still being written); `Engine.recall` and `Engine.explain` delegate here.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from .. import sessions
from ..errors import InvalidInput
from ..policy import Scope
from ..secretfilter import MARKER, redact_text
from . import doctor, receipts
from .inject import Injected
from .pipeline import DegradationLog, RecallConfig, RecallTrace, run
from .terms import TermStats, load_snapshot, save_snapshot

MAX_MESSAGE_CHARS = 20_000
# How far past MAX_MESSAGE_CHARS a message is read for secrets before it is cut: a key or a
# private key the cut would split is recognised whole (a PEM block of a 4096-bit RSA key is ~3,300).
REDACT_BEYOND = 4_096
log = logging.getLogger("keepmind.recall")


@dataclass(frozen=True)
class RecallResult:
    block: str | None
    items: list[Injected]
    receipt_id: str | None
    degraded: list[str] = field(default_factory=list)
    # How long this recall took, in milliseconds, from the message to the block (what the 300 ms
    # budget is about); None when no recall ran (memory paused; the API says None for a public session too).
    took_ms: float | None = None

    def as_dict(self) -> dict:
        return {"block": self.block, "items": [i.as_dict() for i in self.items],
                "receipt": self.receipt_id, "degraded": list(self.degraded), "took_ms": self.took_ms}


class Recaller:
    """The engine's recall service."""

    def __init__(self, engine):
        self.engine = engine
        self.stats = TermStats()
        self.events = DegradationLog(engine.clock)
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        # Receipts still being written: receipt id -> (session id, write, whether it injected anything).
        self._pending: dict[str, tuple[str, Future, bool]] = {}
        self._warmer: threading.Thread | None = None
        engine.on_write(self._on_write)

    def recount_terms(self) -> None:
        """Drop the word counts held in memory: counted again from the live store on next use
        (after an erase, whose stems they still held)."""
        self.stats = TermStats()

    # -- lifecycle (the engine starts and stops it like a worker) ------------------------------

    def start(self) -> None:
        """Count the store's words in the background so the first recall does not pay for it."""
        if self._warmer is None:
            self._warmer = threading.Thread(target=self.warm, name="keepmind-recall-warm", daemon=True)
            self._warmer.start()

    def warm(self) -> None:
        try:
            self.build_stats()
        except Exception:  # noqa: BLE001 - the first recall builds them instead
            log.debug("memory_recall_warm_failed", exc_info=True)

    def build_stats(self) -> None:
        """Count the store's words (from the saved counts when they are recent), and save the counts
        when a full count or many new memories made them worth saving."""
        if self.stats.built:
            return
        now = self.engine.clock()
        with self.engine.db.snapshot() as conn:
            snapshot = self.stats.build(conn, load_snapshot(conn), now=now)
        if snapshot is not None and not self.engine.closed:
            try:
                self.engine.write(save_snapshot, snapshot, now)
            except Exception:  # noqa: BLE001 - the next start counts again
                log.debug("memory_recall_term_stats_not_saved", exc_info=True)

    def stop(self) -> None:
        if self._warmer is not None:
            self._warmer.join(timeout=5)  # counting words over a large store takes under a second
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="keepmind-recall")
            return self._executor

    def _on_write(self, ids: list[str]) -> None:
        if not self.stats.built or not ids:
            return
        with self.engine.db.snapshot() as conn:
            for memory_id in ids:
                for kind, rowid, *row in conn.execute(
                        "SELECT 'document', rowid, title, body, aliases, facets FROM memory_documents"
                        " WHERE document_id=? AND deleted_at IS NULL"
                        " UNION ALL SELECT 'record', rowid, title, body, aliases, facets FROM memory_records"
                        " WHERE record_id=? AND is_tombstone=0", (memory_id, memory_id)):
                    self.stats.add(memory_id, *row, rowid=(kind, rowid))

    # -- recall ---------------------------------------------------------------------------------

    def config(self) -> RecallConfig:
        return RecallConfig.from_settings(self.engine.settings)

    def trace(self, scope: Scope, message: str, *, context=(), exclude: frozenset[str] = frozenset(),
              config: RecallConfig | None = None, calibrating: bool = False) -> RecallTrace:
        """Run the pipeline without storing a receipt (the eval and calibration use this)."""
        if not self.stats.built:
            self.build_stats()  # from the saved counts; the pipeline would count everything
        return run(models=self.engine.models, snapshot=self.engine.db.snapshot,
                   scope=scope, message=message, now=self.engine.now(), stats=self.stats,
                   config=config or self.config(), context=context, exclude=exclude,
                   executor=self._pool(), events=self.events, calibrating=calibrating)

    def recall(self, session_id: str, message: str, context=None) -> RecallResult:
        """The memories that bear on `message` for this session, as a block (or none)."""
        started = time.perf_counter()
        result = self._recall(session_id, message, context)
        return replace(result, took_ms=round((time.perf_counter() - started) * 1000, 1))

    def _recall(self, session_id: str, message: str, context) -> RecallResult:
        if not isinstance(message, str):
            raise InvalidInput("message must be a string")
        # A secret in the message is neither searched for nor kept: the receipt stores the
        # message with the value replaced by the marker, and the pipeline sees a gap there.
        stored = cut_redacted(message)
        message = stored.replace(MARKER, " ")
        if not self.engine.enabled:
            return RecallResult(None, [], None, ["memory_disabled"])
        self._settle(session_id)  # this session's earlier receipts decide what is excluded
        with self.engine.db.snapshot() as conn:
            row = sessions.session_row(conn, session_id)
            epoch = row["compaction_epoch"]
            exclude = receipts.injected_this_epoch(conn, session_id, epoch)
            newest_first = context is None  # the session's turns come newest first, a caller's newest last
            if context is None:
                context = _recent_user_turns(conn, session_id)
        scope = self.engine.scope(session_id)
        if scope.inert or not message.strip():
            return RecallResult(None, [], None, [])
        context = cut_context([redact_text(c).replace(MARKER, " ") for c in _context_list(context)],
                              newest_first=newest_first)
        trace = self.trace(scope, message, context=context, exclude=exclude)
        receipt_id = receipts.new_receipt_id()
        now = self.engine.now()
        body = receipts.receipt_body(trace, receipt_id=receipt_id, session_id=session_id, epoch=epoch,
                                     created_at=now)
        body["query"] = stored
        retention = self.engine.settings["memory.recall.receipt_retention_days"]
        future = self.engine.db.submit(receipts.insert_receipt, body, now, retention)
        with self._lock:
            for rid in [r for r, (_, f, _) in self._pending.items() if f.done()]:
                self._pending.pop(rid, None)
            self._pending[receipt_id] = (session_id, future, bool(trace.injected))
        degraded = list(trace.degraded)
        if exclude and not trace.ranked:
            degraded.append("progressive_recall_exhausted")
        return RecallResult(trace.block, list(trace.injected), receipt_id, degraded)

    def _settle(self, session_id: str) -> None:
        with self._lock:
            # Only a receipt that injected something changes what this session excludes: the next
            # recall does not wait for the others to be written.
            futures = [f for sid, f, injected in self._pending.values() if sid == session_id and injected]
        for future in futures:
            future.result()

    def explain(self, receipt_id: str) -> dict:
        """The stored receipt of one recall."""
        with self._lock:
            pending = self._pending.get(receipt_id)
        if pending is not None:
            pending[1].result()
        with self.engine.db.snapshot() as conn:
            return receipts.load(conn, receipt_id)

    def prune(self) -> int:
        """Delete receipts past the retention (also done as receipts are written)."""
        days = self.engine.settings["memory.recall.receipt_retention_days"]
        return self.engine.write(receipts.prune, self.engine.now(), days)


def attach(engine, *, start: bool = True) -> Recaller:
    """Create the engine's Recaller; the engine stops it (its thread pool) on close."""
    recaller = Recaller(engine)
    engine.add_worker(recaller, start=start)
    engine.doctor_checks.append(doctor.check_gate)
    return recaller


def _recent_user_turns(conn, session_id: str, n: int = 3) -> list[str]:
    """The session's last `n` user texts, newest first, each cut to its first MAX_MESSAGE_CHARS
    (cut_context cuts them again once redacted; the stored text was redacted when it was stored, so
    cutting it here cannot leave part of a secret unrecognised, and a 200,000-character turn is not
    read and redacted whole on each of the next three recalls)."""
    return [r[0] for r in conn.execute(
        "SELECT substr(user_text, 1, ?) FROM session_turns WHERE session_id=? AND user_text != ''"
        " ORDER BY turn_index DESC LIMIT ?", (MAX_MESSAGE_CHARS, session_id, n))]


def cut_redacted(message: str) -> str:
    """`message` redacted, then cut to MAX_MESSAGE_CHARS: redacted first (and a little further
    than the cut), so a secret across the cut is not kept in part; a marker the cut would split
    is left out whole."""
    stored = redact_text(message[:MAX_MESSAGE_CHARS + REDACT_BEYOND])
    if len(stored) <= MAX_MESSAGE_CHARS:
        return stored
    cut = stored[:MAX_MESSAGE_CHARS]
    split = stored.find(MARKER, MAX_MESSAGE_CHARS - len(MARKER) + 1)  # a marker the cut falls inside
    if split != -1 and split < MAX_MESSAGE_CHARS:
        cut = stored[:split]
    return cut


def cut_context(context: list[str], *, newest_first: bool) -> list[str]:
    """The context recall plans with: at most MAX_MESSAGE_CHARS in all, as much as the message.

    Context only lends anchor hints (names) to the plan, yet planning reads all of it: a pasted log
    of 199,000 characters in a recent turn made every recall of the next three turns take seconds.
    Each text keeps its start, as the message does (recall reads no further into a prompt than
    MAX_MESSAGE_CHARS): a recent turn lends the names its own recall saw when it was the message.
    The newest texts are served first (the turn just before this message matters most), and an
    older one gets what they leave, or is dropped; the order of those kept is not changed. Cut after
    redaction, so a secret the cut would split is still recognised whole.
    """
    left = MAX_MESSAGE_CHARS
    kept: list[str | None] = [None] * len(context)
    order = range(len(context)) if newest_first else range(len(context) - 1, -1, -1)
    for i in order:
        if left <= 0:
            break
        kept[i] = context[i][:left]
        left -= len(kept[i])
    return [c for c in kept if c is not None]


def _context_list(context) -> list[str]:
    if context is None:
        return []
    if isinstance(context, str):
        return [context]
    if not isinstance(context, (list, tuple)) or not all(isinstance(c, str) for c in context):
        raise InvalidInput("context must be a string or a list of strings (recent messages)")
    return list(context)[-6:]


__all__ = ["attach", "Recaller", "RecallResult", "RecallConfig", "RecallTrace"]
