"""Calibration: the ranking's weights, the cosine floor, the feature gate's weights and both of its
thresholds, from dev data.

Run over the LoCoMo harness's records (facts mode, anonymized: with names in every question the
cross-conversation test is trivial), and with PrefEval's records too when given (task messages
that need a stated preference, prefeval.py). Steps, all on the records of calibrating runs:
0. ranking: the `hybrid` ranking's coverage weight, the one of COVERAGE_GRID with the best MRR
   over the LoCoMo positives (ties: the smaller weight); then, with PrefEval records, the coverage
   weight of task messages and the standing weight (rank.py), the pair of TASK_GRID x
   STANDING_GRID with the best MRR over the PrefEval positives (ties: the smaller weights). Each
   question's whole candidate pool is re-ranked; the records are then re-ranked with the weights,
   since what the floor and the gate see depends on the ranking;
1. floor: the highest cosine floor that alone still keeps `floor_retention` (all) of the LoCoMo
   questions whose relevant memory is in the top 3; a loose pre-filter, the gate does the work.
   With PrefEval records, a task message's standing statements get a floor of their own
   (`min_cosine_task`, task_floor_at): the highest that keeps `task_floor_retention` (all) of the
   needed preferences ranked in the top 3, never above the questions' floor;
2. item model: L2-regularized logistic regression (Newton) of "this top-3 candidate is relevant"
   on gate.FEATURES, over positives and negatives alike;
3. query model: the same regression of "this question's top 3 hold a relevant memory" on
   gate.QUERY_FEATURES (the best item logit among them), over every question: it is what says
   "inject nothing" for a message this store cannot answer, and for one whose retrieval missed;
4. thresholds: on grids of score quantiles, the (query, item, relative) triple with the best sum
   of refusals on the negatives (mean zero-injection over the sources) and precision on the
   positives, among those whose relevant_recall_retained is still >= `target_retention` (0.96:
   the acceptance bar is 0.95 on held-out data, and leave-one-conversation-out retention came
   out up to 0.013 below the dev figure at a target of 0.955); with PrefEval records, also
   refusing at least `zero_target` of the questions whose topic the store lacks, and adding the
   share of needed preferences injected and their precision to the objective (gatefit.py).
Held-out quality is estimated by leave-one-conversation-out and leave-one-topic-out (both models
refit without the conversation or topic, thresholds kept) and reported with the result; floors
belong to one model and its query encoding, so the result is written into that model's manifest
only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from ..errors import InvalidInput
from . import metrics
from .gate import FeatureGateParams, Surprise
from .gatefit import RELATIVE_GRID, calibrate_gate, fit_logistic, tops_after_floor  # noqa: F401 - RELATIVE_GRID, fit_logistic re-exported
from .rank import RankWeights, rank

KEPT_KEYS = ("encoding", "threshold")
COVERAGE_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
TASK_COVERAGE_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
STANDING_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4)


@dataclass(frozen=True)
class Calibration:
    floor: float
    gate: FeatureGateParams
    report: dict
    coverage_weight: float = RankWeights().coverage
    min_memories: int = 0  # the smallest store calibrated on: recall's IDF never reads a smaller N
    task_weights: dict = field(default_factory=dict)   # task_coverage_weight, standing_weight (with PrefEval)
    task_floor: float | None = None   # the floor of a task message's standing statements (with PrefEval)

    def as_manifest(self, base: dict, data: str, note: str | None = None) -> dict:
        # Keep what describes the model (its encoding); everything else is this run's.
        out = {k: v for k, v in (base or {}).items() if k in KEPT_KEYS}
        out.update({
            "min_cosine": round(self.floor, 4),
            **({"min_cosine_task": round(self.task_floor, 4)} if self.task_floor is not None else {}),
            "ranking": {"coverage_weight": self.coverage_weight, **self.task_weights},
            "term_stats": {"min_memories": self.min_memories},
            "feature_gate": self.gate.as_calibration(),
            "data": data,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
            "dev_metrics": self.report,
        })
        if note:
            out["note"] = note
        return out


def sweep_coverage(records, grid=COVERAGE_GRID, base: RankWeights = RankWeights()) -> tuple[float, list[dict]]:
    """The coverage weight of `grid` with the best MRR on the positives (ties: the smaller), and
    the retrieval of every weight, from each record's whole candidate pool."""
    positives = [r for r in records if r.kind == "positive"]
    sweep = [{"coverage_weight": w, **metrics.retrieval(positives, metrics.channel_order(
        "hybrid", 0, replace(base, coverage=w)))} for w in sorted(grid)]
    best = max(sweep, key=lambda m: (m["mrr"], -m["coverage_weight"]))
    return best["coverage_weight"], sweep


def sweep_task_weights(records, base: RankWeights, task_grid=TASK_COVERAGE_GRID,
                       standing_grid=STANDING_GRID) -> tuple[tuple[float, float], list[dict]]:
    """The (task coverage weight, standing weight) pair with the best MRR on the task positives
    (ties: the smaller weights), and the retrieval (with the top-3 rate) of every pair."""
    positives = [r for r in records if r.kind == "positive"]
    sweep = []
    for tw in sorted(task_grid):
        for sw in sorted(standing_grid):
            order = metrics.channel_order("hybrid", 0, replace(base, task_coverage=tw, standing=sw))
            found = metrics.retrieval(positives, order)
            top3 = sum(1 for r in positives if set(order(r)[:3]) & r.relevant) / len(positives) if positives else 0.0
            sweep.append({"task_coverage_weight": tw, "standing_weight": sw, **found, "in_top3": round(top3, 4)})
    best = max(sweep, key=lambda m: (m["mrr"], -m["standing_weight"], -m["task_coverage_weight"]))
    return (best["task_coverage_weight"], best["standing_weight"]), sweep


def rerank(records, weights: RankWeights, keep: int = 20) -> list:
    """The records as the `hybrid` ranking with these weights orders their pools (top `keep`).

    Recency is left out (now=0 gives every memory the factor 1): a freshly built store's memories
    are all minutes old, so the pipeline's factor is the same for all of them.
    """
    return [replace(r, ranked=rank(r.pool, 0, method="hybrid", weights=weights)[:keep]) for r in records]


def calibrate(records, *, target_retention: float = 0.96, floor_retention: float = 1.0,
              max_items: int = 3, coverage_grid=COVERAGE_GRID, coverage_weight: float | None = None,
              weights: RankWeights = RankWeights(), ranking_records=None, task_records=None,
              zero_target: float = 0.90, task_floor_retention: float = 1.0,
              task_null: tuple[float, float] | None = None) -> Calibration:
    """Ranking weights, floor and feature gate from calibrating runs' records.

    The coverage weight is swept on `ranking_records` when given (the run with the speakers' names
    intact: real memories carry names, and anonymizing is only there to make the gate's
    cross-conversation test fair), else on `records`. `coverage_weight` overrides the sweep's pick
    (recorded as chosen by hand, with the sweep). `task_records` (PrefEval's) pick the task
    weights and join the floor and the gate with a target of their own (`zero_target`).
    """
    picked, sweep = sweep_coverage(ranking_records or records, coverage_grid, weights)
    chosen = picked if coverage_weight is None else float(coverage_weight)
    weights = replace(weights, coverage=chosen)
    ranking = {"coverage_weight": chosen, "chosen_by": "sweep" if coverage_weight is None else "hand",
               "swept_on": "the run with names intact" if ranking_records else "the calibrating run",
               "sweep_pick": picked, "criterion": "mrr on the positives; ties: the smaller weight",
               "sweep": sweep}
    task_weights = {}
    if task_records:
        (task_w, standing_w), task_sweep = sweep_task_weights(task_records, weights)
        weights = replace(weights, task_coverage=task_w, standing=standing_w)
        task_weights = {"task_coverage_weight": task_w, "standing_weight": standing_w}
        ranking["task"] = {**task_weights, "criterion": "mrr on the PrefEval positives; ties: the smaller weights",
                           "sweep": task_sweep}
    questions = len(records)
    records = list(records) + list(task_records or [])
    records = rerank(records, weights, max((len(r.ranked) for r in records), default=20))
    # The floor is set on the questions alone: the preferences task messages need sit at lower
    # cosines (PrefEval's median 0.34), and a floor low enough to keep all of them let through
    # enough noise to cost the questions' refusals (CISI 0.984, cross-conversation 0.679).
    found = metrics.floor_only_at_retention(records[:questions], floor_retention, max_items)
    floor = found["floor"] if found.get("floor") is not None else -1.0
    task_floor = task_floor_at(records[questions:], floor, task_floor_retention, max_items) if task_records else None
    try:
        tops = tops_after_floor(records, floor, max_items, task_floor)
        gate, report = calibrate_gate(records, tops, target=target_retention, zero_target=zero_target)
    except InvalidInput:  # on small data the floor can leave only relevant candidates: no floor then
        floor, task_floor = -1.0, None
        tops = tops_after_floor(records, floor, max_items)
        gate, report = calibrate_gate(records, tops, target=target_retention, zero_target=zero_target)
    if task_null is not None and gate.task is not None and task_null[1] > 0:
        gate = replace(gate, task=replace(gate.task, surprise=Surprise(
            round(task_null[0], 4), round(task_null[1], 4), round(1.0 - zero_target, 4))))
    return Calibration(floor, gate, {
        "ranking": ranking,
        "floor": {"value": round(floor, 4), "retention_alone": found.get("relevant_recall_retained"),
                  **({"task": round(task_floor, 4), "task_retention": task_floor_retention}
                     if task_floor is not None else {})},
        "hybrid": report, "target_retention": target_retention,
        **({"target_zero_injection_prefeval": zero_target} if task_records else {})}, chosen,
        min((r.stats.size for r in records if getattr(r, "stats", None) is not None), default=0), task_weights,
        task_floor)


def task_floor_at(task_records, floor: float, retention: float, max_items: int = 3) -> float | None:
    """The floor of a task message's standing statements: the highest cosine that still keeps
    `retention` of the needed preferences ranked in the top `max_items` (never above the questions'
    floor). The preference a task needs sits at lower cosines than a question's answer (PrefEval's
    median 0.34): the questions' floor dropped 14 in 100 of them before the gate could judge them."""
    cosines = sorted(c.candidate.cosine for r in task_records if r.kind == "positive"
                     for c in r.ranked[:max_items]
                     if c.id in r.relevant and c.candidate.standing and c.candidate.for_task
                     and c.candidate.cosine is not None)
    if not cosines:
        return None
    cut = cosines[min(len(cosines) - 1, int((1.0 - retention) * len(cosines)))]
    return min(floor, cut)


# -- the lexical gate: recall without a query vector ----------------------------------------------

def calibrate_lexical(records, *, target_retention: float = 0.96, max_items: int = 3, task_records=None,
                      zero_target: float = 0.90) -> dict:
    """The gate of recall without a query vector, from a calibrating run with embeddings off.

    The same two models over the same features (the cosine features are all zero there, so they
    get no weight), fitted on what lexical recall ranks: an embedder that is missing, still
    loading, switched off or over its budget must not mean three memories on every turn. The
    result has a model calibration's shape (`feature_gate`, `term_stats`), so recall reads it the
    same way; it belongs to no model and ships with the engine (gate.LEXICAL_CALIBRATION).
    """
    if any(r.mode != "lexical" for r in [*records, *(task_records or [])]):
        raise InvalidInput("the lexical gate is calibrated on a run without query vectors (embeddings off)")
    ranking = {}
    if task_records:  # lexical recall ranks task messages with weights of its own
        (task_w, standing_w), sweep = sweep_task_weights(task_records, RankWeights())
        ranking = {"task_coverage_weight": task_w, "standing_weight": standing_w}
        task_records = rerank(task_records, replace(RankWeights(), task_coverage=task_w, standing=standing_w),
                              max((len(r.ranked) for r in task_records), default=20))
    records = list(records) + list(task_records or [])
    tops = [r.ranked[:max_items] for r in records]
    gate, report = calibrate_gate(records, tops, target=target_retention, zero_target=zero_target)
    out = {
        "term_stats": {"min_memories": min((r.stats.size for r in records if getattr(r, "stats", None)
                                            is not None), default=0)},
        "feature_gate": gate.as_calibration(),
        "dev_metrics": {"lexical": report, "target_retention": target_retention},
    }
    if ranking:
        out["ranking"] = ranking
        out["dev_metrics"]["ranking"] = {"task": {**ranking, "sweep": sweep}}
        out["dev_metrics"]["target_zero_injection_prefeval"] = zero_target
    return out
