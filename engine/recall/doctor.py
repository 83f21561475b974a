"""Recall's doctor check: is there a relevance gate, and does it decide inside its time budget?

The latency is read from recent recall receipts (their `timings_ms.gate_ms`), so `keepmind doctor`
in its own process sees what the running Keepmind's recalls took.
"""

from __future__ import annotations

from ..checks import Check
from ..clock import DAY_MS
from .gate import lexical_calibration

RECENT_RECALLS = 200  # the receipts of the last day read for the gate's timings, newest first
OVER_BUDGET_SHARE = 0.2  # a gate over budget this often means recall is regularly ungated
MIN_OVER = 3  # ... and at least this many times (one slow recall after a cold start is not a finding)


def gate_timings(conn, since: int, limit: int = RECENT_RECALLS) -> list[float]:
    """The gate's milliseconds in the newest recalls since `since` that reached the gate."""
    return [float(ms) for (ms,) in conn.execute(
        "SELECT json_extract(receipt_json, '$.timings_ms.gate_ms') AS ms FROM recall_events"
        " WHERE created_at >= ? AND ms IS NOT NULL ORDER BY created_at DESC LIMIT ?", (since, limit))]


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def check_gate_latency(engine, budget_ms: float) -> Check | None:
    """A warning when the gate ran over its budget in a fifth of the last day's recalls, else None."""
    with engine.db.snapshot() as conn:
        timings = gate_timings(conn, engine.now() - DAY_MS)
    over = sum(1 for ms in timings if ms > budget_ms)
    if over < MIN_OVER or over < OVER_BUDGET_SHARE * len(timings):
        return None
    return Check("Relevance gate", "warning",
                 f"the gate ran over its {budget_ms:.0f} ms budget in {over} of the last {len(timings)} recalls "
                 f"(p95 {_p95(timings):.0f} ms), and those recalls injected the floor's output ungated: "
                 "close programs that keep the CPU busy, or raise memory.recall.gate_budget_ms (and "
                 "memory.recall.timeout_ms) in keepmind.json")


def check_gate(engine) -> Check:
    """A gate is present (cross-encoder, offline feature gate, or the lexical gate) and fast enough.

    What gates recall is the models' `gate_health()`, the answer status and the models page give
    too; this check adds the gate's recent latency and the lexical gate's calibration."""
    settings = engine.settings
    models = engine.models
    health = models.gate_health()
    if health.kind == "off":
        return Check("Relevance gate", "pass", health.summary)
    slow = check_gate_latency(engine, float(settings["memory.recall.gate_budget_ms"]))
    if slow is not None:
        return slow
    lexical = ("without a query vector the lexical gate decides" if lexical_calibration()
               else "the lexical gate's calibration is missing: recall without a query vector injects the "
                    "floor's output (reinstall Keepmind: engine/recall/lexical_gate.json ships with it)")
    if not health.degraded:
        level = "warning" if health.kind == "lexical" and not lexical_calibration() else "pass"
        return Check("Relevance gate", level, f"{health.summary}; {lexical}")
    fix = (f"install one: `keepmind models install-offline`, or `keepmind models download {models.gate_id}`"
           if health.kind == "none" else f"`keepmind models download {models.gate_id}`, or set "
           "memory.recall.gate.enabled back to null")
    return Check("Relevance gate", "warning", f"{health.summary} ({fix}); {lexical}")


__all__ = ["check_gate", "check_gate_latency", "gate_timings"]
