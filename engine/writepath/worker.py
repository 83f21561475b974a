"""Background workers: the curation worker (drains the checkpoint queue) and the observer scheduler.

Each owns a thread whose loop calls `run_once(now)`; tests call `run_once` directly with a
FakeClock and never start the thread. Stopping a curation worker hands its leases back.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass

from ..db import scalar
from ..errors import EngineClosed, EngineError, SecretBlocked
from ..secretfilter import kinds_in_words
from . import checkpoints, curation
from .checkpoints import LeaseLost
from .llm import log_words

log = logging.getLogger("keepmind.writepath.worker")
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class CurationOutcome:
    status: str  # idle | completed | retry | dead | lost
    checkpoint_id: str | None = None
    action: str | None = None
    reason: str | None = None
    memory_ids: tuple[str, ...] = ()


def _has_work(conn, now: int) -> bool:
    """A cheap read first, so an idle worker does not open a write transaction every poll."""
    return bool(scalar(conn, "SELECT 1 FROM memory_checkpoints WHERE (status='pending' AND available_at<=?)"
                             " OR status='leased' LIMIT 1", (now,)))


def _lease(conn, owner: str, now: int, lease_ms: int, max_attempts: int):
    checkpoints.reclaim(conn, now, max_attempts, checkpoints.owner_alive)
    return checkpoints.lease_next(conn, owner, now, lease_ms)


def _adopt(engine, memory_id: str, proposal, decision) -> None:
    """Keep the vector curation computed for the proposal as the new memory's (no second embedding)."""
    try:
        engine.models.adopt(memory_id, proposal.title, proposal.content, decision.vector, decision.model_id)
    except Exception:  # noqa: BLE001 - the write listener embeds it instead
        log.debug("curation_vector_not_adopted", exc_info=True)


class _Loop:
    """A daemon thread calling `run_once()` until stopped; sleeps only when there was no work."""

    name = "keepmind-worker"
    poll_seconds = POLL_SECONDS

    def __init__(self):
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def _busy(self, outcome) -> bool:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                outcome = self.run_once()
            except EngineClosed:
                return
            except Exception:  # noqa: BLE001 - a worker never dies of one bad item
                log.exception("%s_run_failed", self.name)
                outcome = None
            if outcome is None or not self._busy(outcome):
                self._wake.wait(self.poll_seconds)
                self._wake.clear()

    def _join(self, timeout: float) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)


class CurationWorker(_Loop):
    """Leases one checkpoint at a time, plans outside the writer, applies in one transaction."""

    name = "keepmind-curation"

    def __init__(self, engine, llm=None):
        super().__init__()
        self.engine = engine
        self.llm = llm
        self.owner = checkpoints.owner_id(uuid.uuid4().hex[:12])

    def _busy(self, outcome) -> bool:
        return outcome.status != "idle"

    def run_once(self, now: int | None = None) -> CurationOutcome:
        engine = self.engine
        if not engine.enabled:  # the deployment gate: no formation (the queue waits, nothing is lost)
            return CurationOutcome("idle")
        if engine.paused:  # the person's switch: nothing new is kept; the queue waits for resume
            return CurationOutcome("idle")
        now = engine.now() if now is None else now
        max_attempts = int(engine.settings["memory.curation.max_attempts"])
        lease_ms = int(engine.settings["memory.curation.lease_seconds"]) * 1000
        with engine.db.snapshot() as conn:
            if not _has_work(conn, now):
                return CurationOutcome("idle")
        lease = engine.write(_lease, self.owner, now, lease_ms, max_attempts)
        if lease is None:
            return CurationOutcome("idle")
        decision = None
        try:
            proposal, decision = curation.plan(engine, self.llm, lease, now, max_attempts)
            if engine.paused:  # paused while the model was deciding: keep nothing, hand the lease back
                engine.write(checkpoints.release, self.owner, now)
                log.info("curation_paused checkpoint=%s handed_back", lease.checkpoint_id)
                return CurationOutcome("idle", lease.checkpoint_id, reason="memory is paused")
            applied = engine.write(curation.apply, lease, proposal, decision, now)
        except LeaseLost:
            log.warning("curation_lease_lost checkpoint=%s", lease.checkpoint_id)
            return CurationOutcome("lost", lease.checkpoint_id)
        except curation.PermanentFailure as exc:
            return self._fail(lease, str(exc), now, permanent=True)
        except curation.TransientFailure as exc:
            return self._fail(lease, str(exc), now)
        except EngineClosed:
            raise
        except SecretBlocked as exc:
            if decision is not None and (decision.decided_by or "").startswith("model:"):
                # the curator model wrote it into its merge: nothing was written, and asked again it
                # may merge cleanly; no person can edit an observed proposal and "send the rest"
                return self._fail(lease, "the curator model's merged text held secret-like content "
                                  f"({kinds_in_words(exc.kinds)}): nothing was written; `keepmind checkpoints retry "
                                  f"{lease.checkpoint_id}` asks the model again", now, permanent=True)
            return self._fail(lease, f"invalid proposal: {exc.message}", now, permanent=True)
        except EngineError as exc:  # the proposal itself is unusable (e.g. a title too long)
            return self._fail(lease, f"invalid proposal: {exc.message}", now, permanent=True)
        except Exception as exc:  # noqa: BLE001 - recorded on the checkpoint, retried with backoff
            log.exception("curation_failed checkpoint=%s", lease.checkpoint_id)
            return self._fail(lease, f"{type(exc).__name__}: {exc}", now)
        log.info("curation_decision checkpoint=%s action=%s reason=%s", applied.checkpoint_id,
                 applied.action, applied.reason)
        if applied.scrubbed and not engine.db.truncate_wal():  # a reader's snapshot holds it for now
            log.info("curation_scrub_wal_busy checkpoint=%s", applied.checkpoint_id)
        if applied.action == "create" and applied.memory_ids and decision.vector is not None:
            _adopt(engine, applied.memory_ids[0], proposal, decision)
        if applied.memory_ids:
            engine.notify_written(list(applied.memory_ids))
        return CurationOutcome("completed", applied.checkpoint_id, applied.action, applied.reason,
                               applied.memory_ids)

    def _fail(self, lease, error: str, now: int, permanent: bool = False) -> CurationOutcome:
        status = self.engine.write(checkpoints.fail, lease.checkpoint_id, self.owner, error, now,
                                   max_attempts=int(self.engine.settings["memory.curation.max_attempts"]),
                                   permanent=permanent)
        # the error may quote the model's reply (memory text) or a provider's body (a key): the
        # checkpoint keeps it redacted, the log only its own words (llm.log_words)
        log.warning("curation_attempt_failed checkpoint=%s status=%s error=%s", lease.checkpoint_id,
                    status, log_words(error))
        return CurationOutcome({"pending": "retry"}.get(status, status), lease.checkpoint_id,
                               reason=error)

    def drain(self, now: int | None = None, limit: int = 10_000) -> list[CurationOutcome]:
        """run_once until the queue has nothing available (tests and the CLI)."""
        out = []
        for _ in range(limit):
            outcome = self.run_once(now)
            if outcome.status == "idle":
                break
            out.append(outcome)
        return out

    def stop(self) -> None:
        self._join(timeout=5.0)
        if self.engine.db.closed:
            return
        try:
            released = self.engine.write(checkpoints.release, self.owner, self.engine.now())
            if released:
                log.info("curation_leases_released count=%d", released)
        except EngineClosed:
            pass


class ObserverScheduler(_Loop):
    """Finds sessions due for distillation (idle, every N turns, ended, passivated) and distils them."""

    name = "keepmind-observer"
    poll_seconds = 1.0  # triggers are >= 10 s apart; add_turn and end_session wake it at once

    def __init__(self, engine, observer):
        super().__init__()
        self.engine = engine
        self.observer = observer

    def _busy(self, outcome) -> bool:
        return bool(outcome)

    def run_once(self, now: int | None = None) -> list:
        """Distil every due session once; returns the run results."""
        now = self.engine.now() if now is None else now
        results = []
        if self.engine.paused:
            return results  # paused memory observes nothing; due sessions wait for resume
        for session_id, trigger in self.observer.due_sessions(now):
            if self._stop.is_set() or self.engine.paused:  # a pause during the run stops it here
                break
            result = self.observer.distill(session_id, now, trigger)
            if result is not None:
                results.append(result)
        return results

    def stop(self) -> None:
        self._join(timeout=5.0)
