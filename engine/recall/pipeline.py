"""The recall pipeline: plan, candidates, rank, floor, gate, bearings and profiles, inject, inside a time budget.

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
from dataclasses import replace

from .budget import DegradationLog, call_with_budget
from .candidates import Pool, lexical_hits, merge, vector_hits
from .decide import floor_stage, gate_stage, inject_stage
from .gate import coverage, lexical_calibration
from .plan import RecallPlan
from .plan import plan as make_plan
from .rank import RANKINGS, Candidate, RankWeights, best_segment, calibrated_weight, rank
from .state import VECTOR_SEARCH_MS, Channel, RecallConfig, RecallTrace, Run
from .terms import TermStats, collection_floor, row_words


def run(*, models, snapshot, scope, message: str, now: int, stats: TermStats, config: RecallConfig,
        context=(), exclude: frozenset[str] = frozenset(), executor: ThreadPoolExecutor | None = None,
        events: DegradationLog | None = None, timer=time.perf_counter, calibrating: bool = False) -> RecallTrace:
    """One recall. `snapshot()` gives a read transaction; nothing here writes. `stats` are built
    (the Recaller counts them, or restores the saved counts, before it calls this).

    With `calibrating`, floor and gate are skipped (every candidate is ranked and kept for study).
    """
    t0 = timer()
    r = Run(models, snapshot, scope, now, config, exclude, executor,
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
    trace = RecallTrace(plan=make_plan(message, context, parts=config.message_parts), ranking=config.ranking,
                        excluded=tuple(sorted(exclude)))
    if config.ranking not in RANKINGS:
        raise ValueError(f"unknown ranking {config.ranking!r}")
    return trace


def vector_channel(r: Run, trace: RecallTrace, calibrating: bool) -> Channel:
    """The embedder and vector index this recall may use, or why it runs without a query vector."""
    config = r.config
    embedder = r.models.embedder() if (r.models is not None and config.embeddings_enabled) else None
    channel = Channel(embedder, r.models.vectors() if embedder is not None else None)
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


def candidates_stage(r: Run, trace: RecallTrace, channel: Channel, stats: TermStats, message: str) -> Pool:
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
            # The whole message first, alone: its vector is what the channel needs. The parts (a
            # message of several sentences) follow in their own batch only when the budget holds
            # about as much again (together they are about as long as the whole); a batch of all
            # of them would pad every part to the whole message's length.
            segments = trace.plan.segments
            t_e = timer()
            whole = embedder.embed_queries([segments[0]])[0]
            embed_ms = (timer() - t_e) * 1000
            if embed_ms > budget:
                return None, embed_ms, [], None, [], None, False
            parts = None
            if len(segments) > 1 and 2 * embed_ms <= budget:
                parts = embedder.embed_queries(list(segments[1:]))
                if (timer() - t_e) * 1000 > budget:
                    parts = None
                else:
                    embed_ms = (timer() - t_e) * 1000
            parts_dropped = len(segments) > 1 and parts is None  # recalled as one message
            t_s = timer()
            with r.snapshot() as vconn:
                hits = vector_hits(vconn, r.scope, vectors, whole, r.now, exclude=r.exclude)
                part_hits = [h for v in (parts if parts is not None else ())
                             for h in vector_hits(vconn, r.scope, vectors, v, r.now, exclude=r.exclude)]
            # Returned, not written into the trace: a job past its deadline must not touch it.
            return whole, embed_ms, hits, parts, part_hits, (timer() - t_s) * 1000, parts_dropped
        vector_job = r.executor.submit(vector_search) if r.executor is not None else None
    with r.snapshot() as conn:
        t_l = timer()
        lex = lexical_hits(conn, r.scope, trace.plan.terms, r.now, exclude=r.exclude, stats=stats)
        trace.timings["lexical_ms"] = round((timer() - t_l) * 1000, 3)
        # While the query embeds: what ranking reads of the lexical hits' texts, and their vectors
        # (the vector channel finds about half of them itself; merge wants the others').
        words = {row["id"]: row_words(row) for row, _ in lex}
        known = vectors.vectors_of(list(words)) if (trace.model_id is not None and vectors is not None) else {}
        vec_hits: list = []
        part_vecs, part_hits = None, []
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
                channel.query_vec, embed_ms, vec_hits, part_vecs, part_hits, search_ms, parts_dropped = result
                trace.timings["embed_ms"] = round(embed_ms, 3)
                if search_ms is not None:
                    trace.timings["vector_search_ms"] = round(search_ms, 3)
                if parts_dropped:
                    trace.degraded.append("parts:sub_budget_exceeded")
                if channel.query_vec is None:
                    channel.reason = "sub_budget_exceeded"
        pool = replace(merge(conn, lex, vec_hits, vectors=vectors, model_id=trace.model_id,
                             query_vec=channel.query_vec, part_vecs=part_vecs, part_hits=part_hits,
                             known_vectors=known), words=words)
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


def rank_stage(r: Run, trace: RecallTrace, channel: Channel, pool: Pool, stats: TermStats):
    """Rank the pool; returns the calibration in play and the term statistics it floors.

    The calibration in play is the embedder's with a query vector, else the lexical gate's: it
    gives the term statistics' floor, the ranking's coverage weight and the offline gate.
    """
    calibration = channel.embedder.calibration if channel.query_vec is not None else lexical_calibration()
    stats = stats.floored(collection_floor(calibration))
    ranking = r.config.ranking if (channel.query_vec is not None or r.config.ranking != "cosine") else "bm25"
    trace.ranking = ranking
    weights = ranking_weights(r.config.weights, calibration)
    trace.coverage_weight = weights.coverage if ranking == "hybrid" else None
    # Parts are matched by their vectors: without a query vector a part's coverage alone would let a
    # long off-topic message's best sentence through (lexical CISI zero-injection 0.964, not 1.0).
    trace.pool = pool = replace(pool, candidates=judged(trace.plan, pool.candidates, stats, weights,
                                                        parts=channel.query_vec is not None, words=pool.words))
    t_r = r.timer()
    trace.ranked = rank(pool.candidates, r.now, method=ranking, weights=weights)
    trace.timings["rank_ms"] = round((r.timer() - t_r) * 1000, 3)
    return calibration, stats


def judged(plan: RecallPlan, candidates: list[Candidate], stats, weights: RankWeights,
           parts: bool = True, words: dict | None = None) -> list[Candidate]:
    """The candidates with what ranking and the gate read besides the channels' scores: whether
    each is a standing statement and whether it is lasting, its coverage of the message, and, for
    a message of several parts (when `parts`), the part it matches best (rank.best_segment). A
    candidate's stems, standing and lasting found in `words` (worked out while the query
    embedded) are not worked out again."""
    plans = [plan.part(s) for s in range(len(plan.segments) if parts else 1)]
    idfs = [stats.weights(p.content) for p in plans]
    tasks = [p.task for p in plans]
    out = []
    for c in candidates:
        stems, is_standing, is_lasting = (words or {}).get(c.id) or row_words(c.row)
        c = replace(c, standing=is_standing, lasting=is_lasting, for_task=plan.task,
                    coverage=coverage(idfs[0], stems))
        if len(plans) > 1:
            c = best_segment(c, [coverage(idf, stems) for idf in idfs], tasks, weights)
        out.append(c)
    return out


def ranking_weights(weights: RankWeights, calibration: dict | None) -> RankWeights:
    """The rank weights with the coverage and standing weights the calibration in play picked.

    A calibration without `ranking.coverage_weight` (an older manifest, a custom model) keeps the
    weights' own coverage weight, DEFAULT_COVERAGE_WEIGHT (0.3, the value once picked by hand);
    without `ranking.standing_weight` the standing weight stays 0 (no standing prior), without
    `ranking.task_coverage_weight` task messages use the coverage weight. The lexical gate's
    calibration carries its own task weights, picked on lexical recall.
    """
    coverage_w = calibrated_weight(calibration, "coverage_weight")
    if coverage_w is not None:
        weights = replace(weights, coverage=coverage_w)
    standing_w = calibrated_weight(calibration, "standing_weight")
    if standing_w is not None:
        weights = replace(weights, standing=standing_w)
    task_w = calibrated_weight(calibration, "task_coverage_weight")
    return weights if task_w is None else replace(weights, task_coverage=task_w)


def with_overrides(config: RecallConfig, **changes) -> RecallConfig:
    return replace(config, **changes)
