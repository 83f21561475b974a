"""The recall pipeline: plan, candidates, rank, floor, gate, profiles, inject, inside a time budget.

One function per stage; `run` calls them in order and each records what it did in the trace.

Budgets (DESIGN.md): 300 ms in all, 150 ms to embed the query, and the gate gets the lesser of
120 ms and what is left. A stage that runs out of time or has no model degrades to the stage
before it, logs a named event (rate-limited per reason) and records the reason in the result:
no query vector -> lexical ranking and the lexical gate (`memory_recall_vector_degraded`); no gate
-> the floor's output (`memory_recall_gate_degraded`); a candidate without a vector competes on
its lexical score (`memory_recall_coverage_gap`). Lexical-only recall is deterministic.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Callable

from .. import search
from .budget import DegradationLog, call_with_budget
from .candidates import RECALL_MODES, Pool, lexical_hits, merge, vector_hits
from .gate import FeatureGateParams, GateDecision, coverage, cross_encoder_gate, feature_gate, lexical_calibration
from .inject import Injected, fit, render_block
from .plan import RecallPlan
from .plan import plan as make_plan
from .profiles import MEMBERS_READ, Companion, companions, profile_facets
from .rank import RANKINGS, Ranked, RankWeights, calibrated_coverage_weight, rank
from .terms import TermStats, collection_floor, row_stems

DEFAULT_RANKING = "hybrid"
VECTOR_SEARCH_MS = 100.0  # what the vector search and hydration may add to the embed budget


@dataclass(frozen=True)
class RecallConfig:
    """Everything a recall run needs besides the store; built from settings, overridable in tests."""

    timeout_ms: float = 300.0
    embed_budget_ms: float = 150.0
    gate_budget_ms: float = 120.0
    max_items: int = 3
    max_chars: int = 2000
    weights: RankWeights = RankWeights()
    ranking: str = DEFAULT_RANKING
    embeddings_enabled: bool = True
    gate_enabled: bool | None = None          # None: on (False: the floor's output is injected)
    gate_threshold: float | None = None       # cross-encoder threshold override
    floor: float | None = None                # None: the embedder's calibrated floor
    feature_gate: FeatureGateParams | None = None        # None: from the embedder's calibration
    lexical_gate: FeatureGateParams | None = None        # None: the shipped lexical calibration
    use_cross_encoder: bool = True

    @classmethod
    def from_settings(cls, settings) -> "RecallConfig":
        return cls(
            timeout_ms=settings["memory.recall.timeout_ms"],
            embed_budget_ms=settings["memory.recall.embed_budget_ms"],
            gate_budget_ms=settings["memory.recall.gate_budget_ms"],
            max_items=settings["memory.recall.max_items"],
            max_chars=settings["memory.recall.max_injected_chars"],
            weights=RankWeights(vector=settings["memory.recall.vector_weight"],
                                lexical=settings["memory.recall.lexical_weight"],
                                half_life_days=settings["memory.recall.recency_half_life_days"]),
            ranking=settings.get("memory.recall.ranking", DEFAULT_RANKING) or DEFAULT_RANKING,
            embeddings_enabled=settings["memory.embeddings.enabled"],
            gate_enabled=settings["memory.recall.gate.enabled"],
            gate_threshold=settings["memory.recall.gate.threshold"],
            floor=settings["memory.recall.min_cosine"],
        )


@dataclass
class RecallTrace:
    """Everything one recall considered and decided: the receipt's content."""

    plan: RecallPlan
    mode: str = "lexical"                      # "hybrid" | "lexical" | "inert"
    ranking: str = DEFAULT_RANKING
    coverage_weight: float | None = None       # the `hybrid` ranking's coverage weight used
    pool: Pool | None = None
    ranked: list[Ranked] = field(default_factory=list)
    floor: float | None = None
    floor_source: str | None = None
    floor_dropped: list[Ranked] = field(default_factory=list)
    gate_kind: str | None = None               # "cross_encoder" | "feature" | "lexical" | None (degraded)
    gate_input: list[Ranked] = field(default_factory=list)
    gate: list[GateDecision] = field(default_factory=list)
    companions: list[Companion] = field(default_factory=list)   # profile members joining a kept item
    injected: list[Injected] = field(default_factory=list)
    budget_dropped: list[tuple[Injected, str]] = field(default_factory=list)
    excluded: tuple[str, ...] = ()
    degraded: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    model_id: str | None = None

    @property
    def block(self) -> str | None:
        return render_block(self.injected)


@dataclass(frozen=True)
class _Run:
    """What every stage of one recall reads: the store, the scope, the budget and the clock."""

    models: object
    snapshot: Callable
    scope: object
    now: int
    config: RecallConfig
    exclude: frozenset[str]
    executor: ThreadPoolExecutor | None
    emit: Callable
    timer: Callable[[], float]
    t0: float

    def ms(self) -> float:
        """Milliseconds since the recall began."""
        return (self.timer() - self.t0) * 1000


@dataclass
class _Channel:
    """The vector channel of one recall: its embedder and index, the query vector, why it degraded."""

    embedder: object = None
    vectors: object = None
    query_vec: object = None
    reason: str | None = None


def run(*, models, snapshot, scope, message: str, now: int, stats: TermStats, config: RecallConfig,
        context=(), exclude: frozenset[str] = frozenset(), executor: ThreadPoolExecutor | None = None,
        events: DegradationLog | None = None, timer=time.perf_counter, calibrating: bool = False) -> RecallTrace:
    """One recall. `snapshot()` gives a read transaction; nothing here writes.

    With `calibrating`, floor and gate are skipped (every candidate is ranked and kept for study).
    """
    t0 = timer()
    r = _Run(models, snapshot, scope, now, config, exclude, executor,
             events.emit if events else (lambda *a, **k: None), timer, t0)
    trace = plan_stage(message, context, config, exclude)
    if scope.inert:
        trace.mode = "inert"
        return trace
    trace.timings["plan_ms"] = round(r.ms(), 3)
    channel = vector_channel(r, trace, calibrating)
    pool = candidates_stage(r, trace, channel, stats, message)
    calibration, stats = rank_stage(r, trace, channel, pool, stats)
    if calibrating:
        trace.timings["total_ms"] = round(r.ms(), 3)
        return trace
    survivors = floor_stage(trace, channel, config)
    kept = gate_stage(r, trace, survivors, calibration, channel, stats)
    inject_stage(r, trace, kept, channel)
    trace.timings["total_ms"] = round(r.ms(), 3)
    return trace


def plan_stage(message: str, context, config: RecallConfig, exclude: frozenset[str]) -> RecallTrace:
    """The plan (terms, content stems, anchor hints) in a new trace; an unknown ranking is an error."""
    trace = RecallTrace(plan=make_plan(message, context), ranking=config.ranking, excluded=tuple(sorted(exclude)))
    if config.ranking not in RANKINGS:
        raise ValueError(f"unknown ranking {config.ranking!r}")
    return trace


def vector_channel(r: _Run, trace: RecallTrace, calibrating: bool) -> _Channel:
    """The embedder and vector index this recall may use, or why it runs without a query vector."""
    config = r.config
    embedder = r.models.embedder() if (r.models is not None and config.embeddings_enabled) else None
    channel = _Channel(embedder, r.models.vectors() if embedder is not None else None)
    if not config.embeddings_enabled:
        channel.reason = "no_embedder_configured"
    elif embedder is None:
        channel.reason = "embedder_unavailable"
    elif channel.vectors is None:
        channel.reason = "vector_index_unavailable"
    elif not calibrating and config.floor is None and embedder.floor is None:
        channel.reason = "missing_calibration"
    else:
        trace.model_id = embedder.model_id
    return channel


def candidates_stage(r: _Run, trace: RecallTrace, channel: _Channel, stats: TermStats, message: str) -> Pool:
    """Both channels' candidates, merged: the vector channel (embed, search, hydrate) runs on the
    pool's thread while the lexical channel runs here; both release the GIL in ONNX Runtime, numpy
    and SQLite. A vector channel over its budget leaves the lexical candidates alone."""
    config, timer = r.config, r.timer
    t_c = timer()
    vector_job = None
    embedder, vectors = channel.embedder, channel.vectors
    if trace.model_id is not None:
        budget = min(config.embed_budget_ms, config.timeout_ms - r.ms())

        def vector_search():
            t_e = timer()
            vec = embedder.embed_queries([message])[0]
            embed_ms = (timer() - t_e) * 1000
            if embed_ms > budget:
                return None, embed_ms, []
            with r.snapshot() as vconn:
                return vec, embed_ms, vector_hits(vconn, r.scope, vectors, vec, r.now, exclude=r.exclude)
        vector_job = r.executor.submit(vector_search) if r.executor is not None else None
    with r.snapshot() as conn:
        stats.build(conn)
        lex = lexical_hits(conn, r.scope, trace.plan.terms, r.now, exclude=r.exclude)
        vec_hits: list = []
        if trace.model_id is not None:
            # The embed budget plus room for the search, never past the whole budget.
            deadline_ms = min(config.timeout_ms, (t_c - r.t0) * 1000 + budget + VECTOR_SEARCH_MS)
            wait_ms = max(0.0, deadline_ms - r.ms())
            result, _, failure = call_with_budget(
                None, (lambda: vector_job.result(timeout=wait_ms / 1000.0)) if vector_job is not None
                else vector_search, wait_ms, timer)
            if failure:
                channel.reason = failure if failure == "sub_budget_exceeded" else f"embed_{failure}"
            else:
                channel.query_vec, embed_ms, vec_hits = result
                trace.timings["embed_ms"] = round(embed_ms, 3)
                if channel.query_vec is None:
                    channel.reason = "sub_budget_exceeded"
        pool = merge(conn, lex, vec_hits, vectors=vectors, model_id=trace.model_id, query_vec=channel.query_vec)
    if channel.reason:
        trace.degraded.append(f"vector:{channel.reason}")
        r.emit("memory_recall_vector_degraded", channel.reason)
    trace.mode = "hybrid" if channel.query_vec is not None else "lexical"
    trace.pool = pool
    trace.timings["candidates_ms"] = round((timer() - t_c) * 1000, 3)
    if pool.coverage_gaps:
        trace.degraded.append(f"coverage_gap:{len(pool.coverage_gaps)}/{len(pool.candidates)}")
        r.emit("memory_recall_coverage_gap", "missing_vectors", gapCandidates=len(pool.coverage_gaps),
               totalCandidates=len(pool.candidates))
    return pool


def rank_stage(r: _Run, trace: RecallTrace, channel: _Channel, pool: Pool, stats: TermStats):
    """Rank the pool; returns the calibration in play and the term statistics it floors.

    The calibration in play is the embedder's with a query vector, else the lexical gate's: it
    gives the term statistics' floor, the ranking's coverage weight and the offline gate.
    """
    calibration = channel.embedder.calibration if channel.query_vec is not None else lexical_calibration()
    stats = stats.floored(collection_floor(calibration))
    idf = stats.weights(trace.plan.content)
    pool = replace(pool, candidates=[replace(c, coverage=coverage(idf, row_stems(c.row))) for c in pool.candidates])
    trace.pool = pool
    ranking = r.config.ranking if (channel.query_vec is not None or r.config.ranking != "cosine") else "bm25"
    trace.ranking = ranking
    weights = ranking_weights(r.config.weights, calibration)
    trace.coverage_weight = weights.coverage if ranking == "hybrid" else None
    t_r = r.timer()
    trace.ranked = rank(pool.candidates, r.now, method=ranking, weights=weights)
    trace.timings["rank_ms"] = round((r.timer() - t_r) * 1000, 3)
    return calibration, stats


def floor_stage(trace: RecallTrace, channel: _Channel, config: RecallConfig) -> list[Ranked]:
    """Drop candidates under the cosine floor; a candidate without a vector, and lexical-only
    recall, are not floored (they compete on their lexical score)."""
    if channel.query_vec is None:
        return trace.ranked
    if config.floor is not None:
        trace.floor, trace.floor_source = config.floor, "override"
    else:
        trace.floor, trace.floor_source = channel.embedder.floor, channel.embedder.floor_source or "manifest"
    survivors = []
    for ranked in trace.ranked:
        if ranked.candidate.cosine is not None and ranked.candidate.cosine < trace.floor:
            trace.floor_dropped.append(ranked)
        else:
            survivors.append(ranked)
    return survivors


def gate_stage(r: _Run, trace: RecallTrace, survivors: list[Ranked], calibration: dict | None,
               channel: _Channel, stats) -> list[Ranked]:
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


def inject_stage(r: _Run, trace: RecallTrace, kept: list[Ranked], channel: _Channel) -> None:
    """The kept items, then the members of their profiles (profiles.py), within the budgets."""
    config = r.config
    trace.companions = _companions(kept, trace.ranked, r.snapshot, r.scope, r.now, r.exclude, channel.vectors,
                                   channel.query_vec)
    chosen = [_injected(x) for x in kept] + [_injected(c.ranked) for c in trace.companions]
    trace.injected, trace.budget_dropped = fit(chosen, config.max_items, config.max_chars)


def _companions(kept: list[Ranked], ranked: list[Ranked], snapshot, scope, now: int, exclude: frozenset[str],
                vectors, query_vec) -> list[Companion]:
    """The members of the kept items' profiles (profiles.py); no read unless one has a profile."""
    if not any(profile_facets(r.candidate.row) for r in kept):
        return []
    lookup = getattr(vectors, "vector", None) if query_vec is not None else None

    def cosine(item_id: str) -> float | None:
        vec = lookup(item_id) if lookup else None
        return None if vec is None else float(vec @ query_vec)
    with snapshot() as conn:
        return companions(kept, lambda facet: search.facet_members(
            conn, scope, facet, now, MEMBERS_READ, recall_modes=RECALL_MODES, exclude=exclude), cosine, ranked)


def _injected(r: Ranked) -> Injected:
    row = r.candidate.row
    return Injected(r.id, row.get("title", ""), row.get("body", ""), row.get("memory_class", ""), r.score,
                    row.get("authored_at"))


def ranking_weights(weights: RankWeights, calibration: dict | None) -> RankWeights:
    """The rank weights with the coverage weight the embedder's calibration picked.

    A calibration without `ranking.coverage_weight` (an older manifest, a custom model) keeps the
    weights' own coverage weight, DEFAULT_COVERAGE_WEIGHT (0.3, the value once picked by hand).
    So does lexical-only recall: the lexical gate's calibration carries no weight, since the
    weight was calibrated with cosine in the score.
    """
    picked = calibrated_coverage_weight(calibration)
    return weights if picked is None else replace(weights, coverage=picked)


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
    decisions = feature_gate(params, trace.plan, top, stats, context=trace.ranked)
    elapsed = (timer() - start) * 1000
    trace.timings["gate_ms"] = round(elapsed, 3)
    if elapsed > budget:
        trace.degraded.append("gate:sub_budget_exceeded")
        emit("memory_recall_gate_degraded", "sub_budget_exceeded", elapsedMs=round(elapsed))
        return []
    trace.gate_kind = kind
    return decisions


def with_overrides(config: RecallConfig, **changes) -> RecallConfig:
    return replace(config, **changes)
