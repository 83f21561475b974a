"""Long work a person starts and watches: a model download or import, an embeddings backfill.

A job runs in its own thread and reports progress through a handle (`Job`): state, how much is
done out of how much, and a line saying what it is doing. The UI's partial polls a job until it
ends; the CLI prints the same handle as a progress bar. Jobs are kept in memory only (the last
`KEEP` of them): they describe this process's work, not the store's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .clock import Clock
from .errors import EngineError
from .memory import new_id

log = logging.getLogger("keepmind.jobs")
KEEP = 50
STATES = ("running", "done", "failed")

# A job's work: it calls progress(done, total, message) as it goes and returns a summary line.
Progress = Callable[[int, "int | None", str], None]
Work = Callable[[Progress], str]


@dataclass(frozen=True)
class Job:
    """A snapshot of one job (the handle a caller polls)."""

    id: str
    kind: str  # "model-download" | "model-import" | "model-install-offline" | "backfill" | ...
    label: str
    state: str = "running"
    done: int = 0
    total: int | None = None
    message: str = ""
    error: str | None = None
    started_at: int = 0
    finished_at: int | None = None

    @property
    def running(self) -> bool:
        return self.state == "running"

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return max(0.0, min(1.0, self.done / self.total))

    def as_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "label": self.label, "state": self.state,
                "done": self.done, "total": self.total, "fraction": self.fraction,
                "message": self.message, "error": self.error, "started_at": self.started_at,
                "finished_at": self.finished_at}


@dataclass
class Jobs:
    """The jobs of one engine: start, look up, list (newest first)."""

    clock: Clock
    _jobs: dict[str, Job] = field(default_factory=dict)
    _threads: dict[str, threading.Thread] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, kind: str, label: str, work: Work) -> Job:
        """Run `work` in a thread; one job of a kind runs at a time (a second start says so)."""
        with self._lock:
            for job in self._jobs.values():
                if job.kind == kind and job.running:
                    raise EngineError(f"{job.label} is already running: wait for it to finish")
            job = Job(new_id("job"), kind, label, started_at=self.clock())
            self._jobs[job.id] = job
            for old in list(self._jobs)[:-KEEP]:
                if not self._jobs[old].running:
                    self._jobs.pop(old)
                    self._threads.pop(old, None)
        thread = threading.Thread(target=self._run, args=(job.id, work), name=f"keepmind-{kind}", daemon=True)
        self._threads[job.id] = thread
        thread.start()
        return job

    def _update(self, job_id: str, **changes) -> None:
        with self._lock:
            self._jobs[job_id] = replace(self._jobs[job_id], **changes)

    def _run(self, job_id: str, work: Work) -> None:
        def progress(done: int, total: int | None = None, message: str = "") -> None:
            self._update(job_id, done=int(done), total=None if total is None else int(total),
                         message=message or self._jobs[job_id].message)

        try:
            summary = work(progress)
        except EngineError as exc:
            self._update(job_id, state="failed", error=exc.message, finished_at=self.clock())
        except Exception as exc:  # noqa: BLE001 - a job's failure is shown to the person, never raised
            log.exception("job_failed id=%s", job_id)
            self._update(job_id, state="failed", error=f"{type(exc).__name__}: {exc}"[:500],
                         finished_at=self.clock())
        else:
            self._update(job_id, state="done", message=summary or "done", finished_at=self.clock())

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def list(self) -> list[Job]:
        with self._lock:  # newest first, in the order started (two jobs can start in the same ms)
            return list(reversed(self._jobs.values()))

    def wait(self, job_id: str, timeout: float | None = None) -> Job | None:
        """Block until the job ends (tests and the CLI); its final snapshot."""
        thread = self._threads.get(job_id)
        if thread is not None:
            thread.join(timeout)
        return self.get(job_id)


__all__ = ["Job", "Jobs", "Progress", "STATES", "Work"]
