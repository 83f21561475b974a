"""The tray's watch on its Keepmind: status every few seconds, doctor every few minutes.

`run_once()` reads both (doctor only when due) and returns a Reading: the health for the icon, the
reasons for the tooltip, and which doctor problems are new since the last doctor run. A problem
is new when its check's (name, level) was not a problem last time, so a warning that stays raises
one alert, not one per poll; once it clears, its return alerts again. A small loop calls
`run_once` on an interval; tests call it directly.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

from keepmind.engine import Check

from .menu import DEGRADED, HEALTHY, PAUSED

log = logging.getLogger("keepmind.tray")


@dataclass(frozen=True)
class Reading:
    health: str  # healthy | degraded | paused
    reasons: tuple[str, ...]
    problems: tuple[Check, ...]  # doctor's warnings and errors (as of its last run)
    new_problems: tuple[Check, ...]  # those that were not problems at the doctor run before
    paused: bool


def problem_key(check: Check) -> tuple[str, str]:
    return check.name, check.level


def new_problems(previous: frozenset, checks: list[Check]) -> tuple[tuple[Check, ...], frozenset]:
    """The problems among `checks` whose key was not in `previous`, and the keys to remember."""
    problems = [c for c in checks if c.level != "pass"]
    return tuple(c for c in problems if problem_key(c) not in previous), frozenset(map(problem_key, problems))


def health_of(status: dict, problems: tuple[Check, ...]) -> tuple[str, tuple[str, ...]]:
    """The icon's state and its reasons: paused as status says; degraded while status has reasons
    or doctor has any warning or error; else healthy."""
    reasons = list(status.get("reasons") or [])
    reasons += [f"{c.name}: {c.message}" for c in problems if f"{c.name}: {c.message}" not in reasons]
    if status.get("status") == PAUSED:
        return PAUSED, tuple(reasons)
    if status.get("status") == DEGRADED or problems:
        return DEGRADED, tuple(reasons)
    return HEALTHY, ()


class Watch:
    """Polls `status()` (a dict like Engine.status) and `doctor()` (a list of Checks)."""

    def __init__(self, status: Callable[[], dict], doctor: Callable[[], list[Check]], *,
                 on_reading: Callable[[Reading], None] | None = None, status_every_s: float = 5.0,
                 doctor_every_s: float = 120.0, first_doctor_s: float = 0.0,
                 monotonic: Callable[[], float] = time.monotonic):
        self._status = status
        self._doctor = doctor
        self._on_reading = on_reading
        self.status_every_s = status_every_s
        self.doctor_every_s = doctor_every_s
        self._monotonic = monotonic
        self._seen: frozenset = frozenset()
        self._problems: tuple[Check, ...] = ()
        # the first run is due `first_doctor_s` from now (0: at the first poll)
        self._doctor_at: float | None = monotonic() - doctor_every_s + first_doctor_s if first_doctor_s else None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last: Reading | None = None
        self._failing: dict[str, str] = {}  # what failed ("status", "doctor") -> its last error, logged once

    def record_doctor(self, checks: list[Check]) -> tuple[Check, ...]:
        """Take a doctor run's result (the loop's or a person's); returns the problems that are new."""
        with self._lock:
            fresh, self._seen = new_problems(self._seen, checks)
            self._problems = tuple(c for c in checks if c.level != "pass")
            self._doctor_at = self._monotonic()
        return fresh

    def run_once(self, *, doctor: bool | None = None) -> Reading:
        """Read status, and doctor when due (or when `doctor` says so); never raises."""
        due = doctor if doctor is not None else (
            self._doctor_at is None or self._monotonic() - self._doctor_at >= self.doctor_every_s)
        fresh: tuple[Check, ...] = ()
        if due:
            try:
                fresh = self.record_doctor(self._doctor())
                self._recovered("doctor")
            except Exception as exc:  # noqa: BLE001 - the tray keeps watching; the failure is the finding
                self._failed("doctor", exc)
                fresh = self.record_doctor([Check("Doctor", "error", f"doctor itself failed ({exc}); see the logs")])
        try:
            status = self._status()
            self._recovered("status")
        except Exception as exc:  # noqa: BLE001
            self._failed("status", exc)
            status = {"status": DEGRADED, "reasons": [f"status failed ({exc}); see the logs"]}
        health, reasons = health_of(status, self._problems)
        reading = Reading(health, reasons, self._problems, fresh, health == PAUSED)
        self.last = reading
        if self._on_reading is not None:
            self._on_reading(reading)
        return reading

    def _failed(self, what: str, exc: Exception) -> None:
        """Log a failing read with its traceback once; the same failure again (every 5 s, with the
        engine closed under the tray) is not logged again until it clears."""
        said = f"{type(exc).__name__}: {exc}"
        if self._failing.get(what) == said:
            return
        self._failing[what] = said
        log.exception("tray_%s_failed (logged once until it clears)", what)

    def _recovered(self, what: str) -> None:
        if self._failing.pop(what, None) is not None:
            log.info("tray_%s_recovered", what)

    # -- the loop ------------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:  # a Quit may be stopping the watch as it starts
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="keepmind-tray-watch", daemon=True)
                self._thread.start()

    def poke(self) -> None:
        """Read again now (after a pause, a resume, a doctor run)."""
        self._wake.set()

    def stop(self, timeout_s: float = 5.0) -> None:
        with self._lock:
            self._stop.set()
            self._wake.set()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - on_reading failed (the icon); keep watching
                log.exception("tray_watch_failed")
            self._wake.wait(self.status_every_s)
            self._wake.clear()


__all__ = ["Reading", "Watch", "health_of", "new_problems", "problem_key"]
