"""Calibration: the ranking's coverage weight, the cosine floor, the feature gate's weights and both
of its thresholds, from dev data.

Run over the LoCoMo harness's records (facts mode, anonymized: with names in every question the
cross-conversation test is trivial). Steps, all on the records of one calibrating run:
0. ranking: the `hybrid` ranking's coverage weight, the one of COVERAGE_GRID with the best MRR
   over the positives (ties: the smaller weight), by re-ranking each question's whole candidate
   pool; the records are then re-ranked with it, since what the floor and the gate see depends on
   the ranking;
1. floor: the highest cosine floor that alone still keeps `floor_retention` (all) of the
   questions whose relevant memory is in the top 3; a loose pre-filter, the gate does the work;
2. weights: L2-regularized logistic regression (Newton) of "this top-3 candidate is relevant"
   on gate.FEATURES, over positives and negatives alike;
3. thresholds: on a grid of score quantiles, the (query, item) pair with the best sum of refusals
   on the negatives (mean zero-injection over the sources) and precision on the positives, among
   those whose relevant_recall_retained is still >=
   `target_retention` (0.955: the acceptance bar is 0.95 on held-out data; leave-one-out moved
   retention by under 0.01 on the dev data);
Held-out quality is estimated by leave-one-conversation-out (weights refit without the
conversation, thresholds kept) and reported with the result; floors belong to one model and
its query encoding, so the result is written into that model's manifest only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone

import numpy as np

from ..errors import InvalidInput
from . import metrics
from .gate import FEATURES, FeatureGateParams, decide, features, probability
from .rank import RankWeights, rank

L2 = 1.0
KEPT_KEYS = ("encoding", "threshold")
COVERAGE_GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


@dataclass(frozen=True)
class Calibration:
    floor: float
    gate: FeatureGateParams
    report: dict
    coverage_weight: float = RankWeights().coverage
    min_memories: int = 0  # the smallest store calibrated on: recall's IDF never reads a smaller N

    def as_manifest(self, base: dict, data: str, note: str | None = None) -> dict:
        # Keep what describes the model (its encoding); everything else is this run's.
        out = {k: v for k, v in (base or {}).items() if k in KEPT_KEYS}
        out.update({
            "min_cosine": round(self.floor, 4),
            "ranking": {"coverage_weight": self.coverage_weight},
            "term_stats": {"min_memories": self.min_memories},
            "feature_gate": self.gate.as_calibration(),
            "data": data,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
            "dev_metrics": self.report,
        })
        if note:
            out["note"] = note
        return out


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = L2, iters: int = 30) -> np.ndarray:
    """Weights (last = bias) of an L2-regularized logistic regression, by Newton's method."""
    Xb = np.hstack([X, np.ones((len(X), 1))])
    w = np.zeros(Xb.shape[1])
    reg = np.r_[np.full(X.shape[1], l2), 0.0]
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(Xb @ w, -50, 50)))
        grad = Xb.T @ (p - y) + reg * w
        hess = (Xb * (p * (1 - p))[:, None]).T @ Xb + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def sweep_coverage(records, grid=COVERAGE_GRID, base: RankWeights = RankWeights()) -> tuple[float, list[dict]]:
    """The coverage weight of `grid` with the best MRR on the positives (ties: the smaller), and
    the retrieval of every weight, from each record's whole candidate pool."""
    positives = [r for r in records if r.kind == "positive"]
    sweep = [{"coverage_weight": w, **metrics.retrieval(positives, metrics.channel_order(
        "hybrid", 0, replace(base, coverage=w)))} for w in sorted(grid)]
    best = max(sweep, key=lambda m: (m["mrr"], -m["coverage_weight"]))
    return best["coverage_weight"], sweep


def rerank(records, weights: RankWeights, keep: int = 20) -> list:
    """The records as the `hybrid` ranking with these weights orders their pools (top `keep`).

    Recency is left out (now=0 gives every memory the factor 1): a freshly built store's memories
    are all minutes old, so the pipeline's factor is the same for all of them.
    """
    return [replace(r, ranked=rank(r.pool, 0, method="hybrid", weights=weights)[:keep]) for r in records]


def _tops(records, floor: float, max_items: int):
    """Per record: the ranked list the gate would see (after the floor), best first."""
    return [[c for c in r.ranked if c.candidate.cosine is None or c.candidate.cosine >= floor][:max_items]
            for r in records]


def _feature_rows(records, tops, lexical_half: float):
    rows, labels, owner = [], [], []
    for qi, (r, top) in enumerate(zip(records, tops)):
        if not top:
            continue
        for c, f in zip(top, features(r.plan, top, r.stats, lexical_half)):
            rows.append(f)
            labels.append(1.0 if c.id in r.relevant else 0.0)
            owner.append(qi)
    return rows, np.array(labels), np.array(owner)


def _injections(records, tops, params: FeatureGateParams, feats_by_record):
    out = {}
    for qi, (r, top) in enumerate(zip(records, tops)):
        feats = feats_by_record.get(qi)
        if not top or not feats:
            out[id(r)] = []
            continue
        scores = [probability(params, f) for f in feats]
        out[id(r)] = [d.id for d in decide(scores, [c.id for c in top], params.item_threshold,
                                           params.query_threshold) if d.kept]
    return out


def _objective(m: dict) -> float:
    """Mean zero-injection over the negative sources plus precision on the positives."""
    zero = list(m["zero_injection"].values())
    return (sum(zero) / len(zero) if zero else 0.0) + m["precision"]


def choose_thresholds(records, tops, base: FeatureGateParams, feats_by_record, target: float,
                      objective=None) -> tuple[FeatureGateParams, dict]:
    """The (item, query) thresholds with the most refusals on negatives at retention >= target."""
    scored = {qi: [probability(base, f) for f in fs] for qi, fs in feats_by_record.items()}
    ids = {qi: [c.id for c in tops[qi]] for qi in scored}
    flat = np.array([v for vs in scored.values() for v in vs])
    q_grid = np.unique(np.quantile(flat, np.linspace(0.3, 0.995, 100))) if len(flat) else np.array([0.5])
    i_grid = np.unique(np.r_[0.0, np.quantile(flat, np.linspace(0.05, 0.99, 40))]) if len(flat) else np.array([0.0])

    def run(ti: float, tq: float) -> dict:
        inj = {}
        for qi, vs in scored.items():
            best = max(vs)
            inj[id(records[qi])] = [] if best < tq else [i for i, v in zip(ids[qi], vs) if v >= ti]
        return metrics.gate_metrics(records, lambda r: inj.get(id(r), []))

    objective = objective or _objective
    best = None
    for tq in q_grid:
        for ti in i_grid[i_grid <= tq]:
            m = run(float(ti), float(tq))
            if m["relevant_recall_retained"] >= target and (best is None or objective(m) > objective(best[1])):
                best = (replace(base, item_threshold=float(ti), query_threshold=float(tq)), m)
    if best is None:  # nothing reaches the target: inject whatever the floor lets through
        return replace(base, item_threshold=0.0, query_threshold=0.0), run(0.0, 0.0)
    return best


def calibrate_gate(records, tops, *, target: float, lexical_half: float = 8.0) -> tuple[FeatureGateParams, dict]:
    rows, y, owner = _feature_rows(records, tops, lexical_half)
    if not rows or y.sum() == 0 or y.sum() == len(y):
        raise InvalidInput("too little data to calibrate: the top 3 candidates must include both relevant "
                           "and irrelevant memories; use more conversations or add --negatives files")
    X = np.array([[f[k] for k in FEATURES] for f in rows])
    w = fit_logistic(X, y)
    base = FeatureGateParams(weights=tuple(float(v) for v in w[:-1]), bias=float(w[-1]), item_threshold=0.0,
                             query_threshold=0.0, lexical_half=lexical_half, source="calibration")
    index = {id(r): qi for qi, r in enumerate(records)}
    feats_by_record: dict[int, list[dict]] = {}
    for f, qi in zip(rows, owner):
        feats_by_record.setdefault(int(qi), []).append(f)
    # Retention is relative to what the floor alone keeps: the target applies to the ungated injection.
    ungated = metrics.gate_metrics(records, lambda r: [c.id for c in tops[index[id(r)]]])
    target = target * ungated["relevant_recall_retained"]
    params, m = choose_thresholds(records, tops, base, feats_by_record, target)
    # Leave one conversation out: refit the weights without it, keep the thresholds, score it.
    held_out = {}
    stores = sorted({r.store for r in records})
    if len(stores) > 1:
        inj_all: dict[int, list[str]] = {}
        store_of = np.array([records[int(qi)].store for qi in owner])
        for s in stores:
            train = store_of != s
            if y[train].sum() == 0:
                continue
            w2 = fit_logistic(X[train], y[train])
            p2 = replace(params, weights=tuple(float(v) for v in w2[:-1]), bias=float(w2[-1]))
            sub = {qi: fs for qi, fs in feats_by_record.items() if records[qi].store == s}
            inj = _injections(records, tops, p2, sub)
            mine = {id(records[qi]) for qi in sub}
            inj_all.update({k: v for k, v in inj.items() if k in mine})
        held_out = metrics.gate_metrics(records, lambda r: inj_all.get(id(r), []))
    auc = _auc(np.array([probability(params, f) for f in rows]), y)
    return params, {"dev": m, "leave_one_conversation_out": held_out, "auc": round(auc, 4),
                    "candidates": int(len(y)), "relevant": int(y.sum())}


def _auc(scores: np.ndarray, y: np.ndarray) -> float:
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = y.sum()
    neg = len(y) - pos
    return float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg)) if pos and neg else 0.5


def calibrate(records, *, target_retention: float = 0.955, floor_retention: float = 1.0,
              max_items: int = 3, coverage_grid=COVERAGE_GRID, coverage_weight: float | None = None,
              weights: RankWeights = RankWeights()) -> Calibration:
    """Coverage weight, floor and feature gate from one calibrating run's records.

    `coverage_weight` overrides the sweep's pick (recorded as chosen by hand, with the sweep).
    """
    picked, sweep = sweep_coverage(records, coverage_grid, weights)
    chosen = picked if coverage_weight is None else float(coverage_weight)
    records = rerank(records, replace(weights, coverage=chosen), max((len(r.ranked) for r in records), default=20))
    ranking = {"coverage_weight": chosen, "chosen_by": "sweep" if coverage_weight is None else "hand",
               "sweep_pick": picked, "criterion": "mrr on the positives; ties: the smaller weight",
               "sweep": sweep}
    found = metrics.floor_only_at_retention(records, floor_retention, max_items)
    floor = found["floor"] if found.get("floor") is not None else -1.0
    try:
        tops = _tops(records, floor, max_items)
        gate, report = calibrate_gate(records, tops, target=target_retention)
    except InvalidInput:  # on small data the floor can leave only relevant candidates: no floor then
        floor = -1.0
        tops = _tops(records, floor, max_items)
        gate, report = calibrate_gate(records, tops, target=target_retention)
    return Calibration(floor, gate, {
        "ranking": ranking,
        "floor": {"value": round(floor, 4), "retention_alone": found.get("relevant_recall_retained")},
        "hybrid": report, "target_retention": target_retention}, chosen,
        min((r.stats.size for r in records if getattr(r, "stats", None) is not None), default=0))
