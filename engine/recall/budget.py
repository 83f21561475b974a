"""The time budget of one recall: calls bounded by a sub-budget, and rate-limited degradation events.

A stage that runs out of time or fails degrades recall to the stage before it; it never fails the
turn. The events (`memory_recall_vector_degraded`, `memory_recall_gate_degraded`,
`memory_recall_coverage_gap`) are logged once per reason per five minutes, so a model that stays
slow does not flood the log.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Callable

log = logging.getLogger("keepmind.recall")
DEGRADED_LOG_COOLDOWN_MS = 5 * 60 * 1000


class DegradationLog:
    """Named degradation events, one per reason per five minutes (the clock is injected)."""

    def __init__(self, clock: Callable[[], int]):
        self._clock = clock
        self._last: dict[tuple[str, str], int] = {}

    def emit(self, event: str, reason: str, **detail) -> None:
        now = self._clock()
        key = (event, reason.split(":")[0])
        last = self._last.get(key)
        if last is not None and now - last < DEGRADED_LOG_COOLDOWN_MS:
            return
        self._last[key] = now
        extra = " ".join(f"{k}={v}" for k, v in detail.items())
        log.warning("%s reason=%s %s", event, reason, extra)


def call_with_budget(executor: ThreadPoolExecutor | None, fn, budget_ms: float,
                     timer) -> tuple[object, float, str | None]:
    """Run fn within budget_ms; returns (result or None, elapsed ms, failure reason or None)."""
    start = timer()
    if budget_ms <= 0:
        return None, 0.0, "sub_budget_exceeded"
    try:
        if executor is None:
            result = fn()
        else:
            result = executor.submit(fn).result(timeout=budget_ms / 1000.0)
    except FutureTimeout:
        return None, (timer() - start) * 1000, "sub_budget_exceeded"
    except Exception as exc:  # noqa: BLE001 - a model failure degrades recall, never fails the turn
        return None, (timer() - start) * 1000, f"failed:{exc.__class__.__name__}"
    elapsed = (timer() - start) * 1000
    if elapsed > budget_ms:
        return None, elapsed, "sub_budget_exceeded"
    return result, elapsed, None
