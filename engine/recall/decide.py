"""The deciding stages of a recall: floor, gate and inject (pipeline.py runs them after ranking).

The floor drops candidates under the embedder's calibrated cosine floor; the gate (the
cross-encoder when one is installed, else the offline feature gate of the calibration in play,
gate.py) decides about the top survivors, and degrades to the floor's output when it has no model
or runs out of time; inject fits the kept items, what bears on the task whatever its words (a food
task's diet statements, a car task's vehicle: bearing.py) and the members of the kept items'
profiles (profiles.py) into the item and character budgets.
"""

from __future__ import annotations

from .. import search
from ..bearing import BEARING_READ, task_bears_on
from ..stance import caution
from .budget import call_with_budget
from .candidates import RECALL_MODES, VECTOR_K
from .gate import FeatureGateParams, GateDecision, above_floor, cross_encoder_gate, feature_gate
from .inject import Injected, fit, said_by_another
from .plan import content_stems
from .profiles import MEMBERS_READ, Companion, companions, joined_ranked, profile_facets
from .rank import Ranked
from .state import Channel, RecallConfig, RecallTrace, Run
from .terms import TermStats


def floor_stage(trace: RecallTrace, channel: Channel, config: RecallConfig) -> list[Ranked]:
    """Drop candidates under the cosine floor; a candidate without a vector, and lexical-only
    recall, are not floored (they compete on their lexical score)."""
    if channel.query_vec is None:
        return trace.ranked
    if config.floor is not None:
        trace.floor, trace.floor_source = config.floor, "override"
    else:
        trace.floor, trace.floor_source = channel.embedder.floor, channel.embedder.floor_source or "manifest"
    # A task message's standing statements have a floor of their own when the calibration gives one
    # (calibrate.task_floor_at): the preference a task needs sits at lower cosines than an answer.
    task_floor = None if config.floor is not None else _task_floor(channel.embedder.calibration)
    survivors = []
    for ranked in trace.ranked:
        if above_floor(ranked.candidate, trace.floor, task_floor):
            survivors.append(ranked)
        else:
            trace.floor_dropped.append(ranked)
    return survivors


def _task_floor(calibration: dict | None) -> float | None:
    value = (calibration or {}).get("min_cosine_task")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def gate_stage(r: Run, trace: RecallTrace, survivors: list[Ranked], calibration: dict | None,
               channel: Channel, stats) -> list[Ranked]:
    """The top survivors through the relevance gate; returns the kept ones (all of them when the
    gate is degraded: the floor's output is injected)."""
    config = r.config
    top = survivors[: config.max_items]
    trace.gate_input = top
    decisions = _gate(trace, top, r.models, calibration, channel.query_vec is None, stats, config, r.executor,
                      r.timer, config.timeout_ms - r.ms(), r.emit) if top else []
    trace.gate = decisions
    kept_ids = {d.id for d in decisions if d.kept} if trace.gate_kind else {x.id for x in top}
    return [x for x in top if x.id in kept_ids]


def inject_stage(r: Run, trace: RecallTrace, kept: list[Ranked], channel: Channel) -> None:
    """The kept items, then what bears on the task whatever its words (a food task: the diet
    statements, bearing.py), then the members of the kept items' profiles (profiles.py), within the
    budgets; an item whose every word another says is left out first (inject.said_by_another)."""
    config = r.config
    cosine = _cosine(channel)
    bearing = _bearing(trace, kept, r, cosine)
    borne = {b.id for b in bearing}
    profiles = _companions(kept, trace.ranked, r.snapshot, r.scope, r.now, r.exclude, cosine)
    trace.companions = bearing + [c for c in profiles if c.id not in borne]
    chosen, said = said_by_another([_injected(x) for x in kept] + [_injected(c.ranked) for c in trace.companions],
                                   content_stems)
    trace.injected, trace.budget_dropped = fit(chosen, config.max_items, config.max_chars)
    trace.budget_dropped += said


def _cosine(channel: Channel):
    """A memory's cosine to the message by its id, or None (no query vector, no vector yet)."""
    lookup = getattr(channel.vectors, "vector", None) if channel.query_vec is not None else None

    def cosine(item_id: str) -> float | None:
        vec = lookup(item_id) if lookup else None
        return None if vec is None else float(vec @ channel.query_vec)
    return cosine


def _bearing(trace: RecallTrace, kept: list[Ranked], r: Run, cosine) -> list[Companion]:
    """For a task about what standing statements bear on whatever its words (bearing.py: a diet
    bears on every task about food), those the gate did not keep, closest to the message first."""
    bearing = task_bears_on(trace.plan.query, trace.plan.task)
    if bearing is None:
        return []
    t_b = r.timer()
    taken = frozenset(x.id for x in kept) | r.exclude
    with r.snapshot() as conn:
        rows = search.bearing_members(conn, r.scope, bearing, r.now, BEARING_READ, recall_modes=RECALL_MODES,
                                      exclude=taken)
    # An allergy or intolerance first: the item budget must not leave out what the user cannot eat
    # for what they dislike ("I have a severe allergy to tree nuts." for "I dislike spicy foods.").
    found = sorted(((cosine(row["id"]), n, row) for n, row in enumerate(rows)),
                   key=lambda t: (not caution(t[2]["body"]), t[0] is None, -(t[0] or 0.0), t[1]))
    trace.timings["bearing_ms"] = round((r.timer() - t_b) * 1000, 3)
    by_id = {x.id: x for x in trace.ranked}
    return [Companion(joined_ranked(row, cos, by_id, f"bears_on:{bearing}"), bearing, None,
                      f"bears on every {bearing} task") for cos, _, row in found]


def _companions(kept: list[Ranked], ranked: list[Ranked], snapshot, scope, now: int, exclude: frozenset[str],
                cosine) -> list[Companion]:
    """The members of the kept items' profiles (profiles.py); no read unless one has a profile."""
    if not any(profile_facets(r.candidate.row) for r in kept):
        return []
    with snapshot() as conn:
        return companions(kept, lambda facet: search.facet_members(
            conn, scope, facet, now, MEMBERS_READ, recall_modes=RECALL_MODES, exclude=exclude), cosine, ranked)


def _injected(r: Ranked) -> Injected:
    row = r.candidate.row
    return Injected(r.id, row.get("title", ""), row.get("body", ""), row.get("memory_class", ""), r.score,
                    row.get("authored_at"))


def _gate(trace: RecallTrace, top: list[Ranked], models, calibration: dict | None, lexical: bool,
          stats: TermStats, config: RecallConfig, executor, timer, left_ms: float, emit) -> list[GateDecision]:
    if config.gate_enabled is False:
        trace.degraded.append("gate:gate_disabled_by_config")
        emit("memory_recall_gate_degraded", "gate_disabled_by_config", elapsedMs=0)
        return []
    budget = min(config.gate_budget_ms, left_ms)
    cross = models.gate() if (models is not None and config.use_cross_encoder) else None
    if cross is not None:
        threshold = config.gate_threshold if config.gate_threshold is not None else cross.threshold
        if threshold is not None:
            result, elapsed, failure = call_with_budget(
                executor, lambda: cross_encoder_gate(cross, threshold, trace.plan.query, top), budget, timer)
            trace.timings["gate_ms"] = round(elapsed, 3)
            if not failure:
                trace.gate_kind = "cross_encoder"
                return result
            reason = failure if failure == "sub_budget_exceeded" else f"score_{failure}"
            trace.degraded.append(f"gate:cross_encoder_{reason}")
            emit("memory_recall_gate_degraded", reason, elapsedMs=round(elapsed))
    # The offline feature gate of the calibration in play: the embedder's with a query vector;
    # without one (no embedder, still loading, switched off, over its budget) the lexical gate,
    # the same models fitted on lexical recall (calibrate.calibrate_lexical).
    kind = "lexical" if lexical else "feature"
    params = ((config.lexical_gate if lexical else config.feature_gate)
              or FeatureGateParams.from_calibration(calibration, source="lexical" if lexical else "manifest"))
    if params is None:
        reason = "missing_calibration" if (cross is not None or lexical) else "no_scorer_configured"
        trace.degraded.append(f"gate:{reason}")
        emit("memory_recall_gate_degraded", reason, elapsedMs=0)
        return []
    start = timer()
    # The vector channel found fewer than it asked for: every memory the scope may recall is a candidate
    # (but those already injected in this session).
    seen_all = not lexical and trace.pool is not None and trace.pool.vector_count < VECTOR_K
    decisions = feature_gate(params, trace.plan, top, stats, context=trace.ranked, seen_all=seen_all,
                             excluded=len(trace.excluded))
    elapsed = (timer() - start) * 1000
    trace.timings["gate_ms"] = round(elapsed, 3)
    if elapsed > budget:
        trace.degraded.append("gate:sub_budget_exceeded")
        emit("memory_recall_gate_degraded", "sub_budget_exceeded", elapsedMs=round(elapsed))
        return []
    trace.gate_kind = kind
    return decisions
