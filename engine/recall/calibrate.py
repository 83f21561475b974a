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
2. item model: L2-regularized logistic regression (Newton) of "this top-3 candidate is relevant"
   on gate.FEATURES, over positives and negatives alike;
3. query model: the same regression of "this question's top 3 hold a relevant memory" on
   gate.QUERY_FEATURES (the best item logit among them), over every question: it is what says
   "inject nothing" for a message this store cannot answer, and for one whose retrieval missed;
4. thresholds: on grids of score quantiles, the (query, item, relative) triple with the best sum
   of refusals on the negatives (mean zero-injection over the sources) and precision on the
   positives, among those whose relevant_recall_retained is still >= `target_retention` (0.96:
   the acceptance bar is 0.95 on held-out data, and leave-one-conversation-out retention came
   out up to 0.013 below the dev figure at a target of 0.955).
Held-out quality is estimated by leave-one-conversation-out (both models refit without the
conversation, thresholds kept) and reported with the result; floors belong to one model and
its query encoding, so the result is written into that model's manifest only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone
from functools import cached_property

import numpy as np

from ..errors import InvalidInput
from . import metrics
from .gate import FEATURES, QUERY_FEATURES, FeatureGateParams, features, keeps, query_features
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


@dataclass
class GateRows:
    """The calibrating records as the gate sees them: one row per top candidate."""

    X: np.ndarray           # item features (FEATURES), one row per candidate
    y: np.ndarray           # 1: the candidate is relevant to its question
    owner: np.ndarray       # index of the candidate's record
    ids: list[str]
    records: list
    tops: list

    def by_record(self, values) -> dict[int, list[float]]:
        out: dict[int, list[float]] = {}
        for v, qi in zip(values, self.owner):
            out.setdefault(int(qi), []).append(float(v))
        return out

    @cached_property
    def ids_by_record(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for mid, qi in zip(self.ids, self.owner):
            out.setdefault(int(qi), []).append(mid)
        return out


def gate_rows(records, tops) -> GateRows:
    rows, labels, owner, ids = [], [], [], []
    for qi, (r, top) in enumerate(zip(records, tops)):
        if not top:
            continue
        for c, f in zip(top, features(r.plan, top, r.stats, context=r.ranked)):
            rows.append([f[k] for k in FEATURES])
            labels.append(1.0 if c.id in r.relevant else 0.0)
            owner.append(qi)
            ids.append(c.id)
    return GateRows(np.array(rows).reshape(-1, len(FEATURES)), np.array(labels), np.array(owner, dtype=int), ids,
                    records, tops)


def _predict(w: np.ndarray, X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((len(X), 1))]) @ w


def _query_rows(g: GateRows, item_logits: np.ndarray):
    """Per record with candidates: its query features (given the item model's logits) and whether
    its top candidates hold a relevant memory (what the query model learns to predict)."""
    per = g.by_record(item_logits)
    order = sorted(per)
    Q = np.array([[query_features(g.records[qi].plan, g.tops[qi], g.records[qi].stats, per[qi])[k]
                   for k in QUERY_FEATURES] for qi in order]).reshape(-1, len(QUERY_FEATURES))
    L = np.array([1.0 if g.records[qi].kind == "positive" and any(c.id in g.records[qi].relevant
                                                                  for c in g.tops[qi]) else 0.0 for qi in order])
    return order, Q, L


def _fit_both(g: GateRows, train_items: np.ndarray, train_record) -> tuple[np.ndarray, np.ndarray]:
    """Item weights on the training candidates, then query weights on the training records."""
    w_item = fit_logistic(g.X[train_items], g.y[train_items])
    order, Q, L = _query_rows(g, _predict(w_item, g.X))
    train = np.array([train_record(qi) for qi in order], dtype=bool)
    if L[train].sum() == 0 or L[train].sum() == train.sum():
        raise InvalidInput("too little data to calibrate the query model: some questions must have a relevant "
                           "memory among their top candidates and some must not")
    return w_item, fit_logistic(Q[train], L[train])


def _with_models(base: FeatureGateParams, w_item: np.ndarray, w_query: np.ndarray) -> FeatureGateParams:
    return replace(base, weights=tuple(float(v) for v in w_item[:-1]), bias=float(w_item[-1]),
                   query_weights=tuple(float(v) for v in w_query[:-1]), query_bias=float(w_query[-1]))


def _scores(g: GateRows, params: FeatureGateParams) -> tuple[dict[int, list[float]], dict[int, float]]:
    """Item probabilities and the query score, per record with candidates."""
    w_item = np.r_[params.weights, params.bias]
    logits = _predict(w_item, g.X)
    items = g.by_record(1.0 / (1.0 + np.exp(-np.clip(logits, -50, 50))))
    order, Q, _ = _query_rows(g, logits)
    if params.query_weights is None:
        return items, {qi: max(items[qi]) for qi in order}
    q = _predict(np.r_[params.query_weights, params.query_bias], Q)
    return items, {qi: float(v) for qi, v in zip(order, 1.0 / (1.0 + np.exp(-np.clip(q, -50, 50))))}


def _injected(g: GateRows, items, queries, params: FeatureGateParams, only=None) -> dict[int, list[str]]:
    ids = g.ids_by_record
    out = {}
    for qi, vs in items.items():
        if only is not None and qi not in only:
            continue
        mask = keeps(vs, queries[qi], params.item_threshold, params.query_threshold, params.relative)
        out[id(g.records[qi])] = [mid for mid, k in zip(ids[qi], mask) if k]
    return out


def _objective(m: dict) -> float:
    """Mean zero-injection over the negative sources plus precision on the positives."""
    zero = list(m["zero_injection"].values())
    return (sum(zero) / len(zero) if zero else 0.0) + m["precision"]


RELATIVE_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)


def choose_thresholds(g: GateRows, base: FeatureGateParams, target: float,
                      objective=None) -> tuple[FeatureGateParams, dict]:
    """The (query, item, relative) thresholds with the best objective at retention >= target."""
    items, queries = _scores(g, base)
    flat_items = np.array([v for vs in items.values() for v in vs])
    flat_query = np.array(list(queries.values()))
    q_grid = np.unique(np.quantile(flat_query, np.linspace(0.2, 0.99, 80))) if len(flat_query) else np.array([0.5])
    i_grid = (np.unique(np.r_[0.0, np.quantile(flat_items, np.linspace(0.02, 0.9, 30))]) if len(flat_items)
              else np.array([0.0]))
    records = g.records

    def run(tq: float, ti: float, rho: float) -> dict:
        inj = _injected(g, items, queries, replace(base, item_threshold=ti, query_threshold=tq, relative=rho))
        return metrics.gate_metrics(records, lambda r: inj.get(id(r), []))

    objective = objective or _objective
    best = None
    for tq in q_grid:
        for ti in i_grid:
            for rho in RELATIVE_GRID:
                m = run(float(tq), float(ti), rho)
                if m["relevant_recall_retained"] >= target and (best is None or objective(m) > objective(best[1])):
                    best = (replace(base, item_threshold=float(ti), query_threshold=float(tq), relative=rho), m)
    if best is None:  # nothing reaches the target: inject whatever the floor lets through
        return replace(base, item_threshold=0.0, query_threshold=0.0, relative=0.0), run(0.0, 0.0, 0.0)
    return best


def calibrate_gate(records, tops, *, target: float) -> tuple[FeatureGateParams, dict]:
    g = gate_rows(records, tops)
    if not len(g.y) or g.y.sum() == 0 or g.y.sum() == len(g.y):
        raise InvalidInput("too little data to calibrate: the top 3 candidates must include both relevant "
                           "and irrelevant memories; use more conversations or add --negatives files")
    everything = np.ones(len(g.y), dtype=bool)
    w_item, w_query = _fit_both(g, everything, lambda qi: True)
    base = _with_models(FeatureGateParams(weights=(), bias=0.0, item_threshold=0.0, query_threshold=0.0,
                                          source="calibration"), w_item, w_query)
    # Retention is relative to what the floor alone keeps: the target applies to the ungated injection.
    index = {id(r): qi for qi, r in enumerate(records)}
    ungated = metrics.gate_metrics(records, lambda r: [c.id for c in tops[index[id(r)]]])
    target = target * ungated["relevant_recall_retained"]
    params, m = choose_thresholds(g, base, target)
    # Leave one conversation out: refit both models without it, keep the thresholds, score it.
    held_out = {}
    stores = sorted({r.store for r in records})
    if len(stores) > 1:
        inj_all: dict[int, list[str]] = {}
        store_of = np.array([records[qi].store for qi in g.owner])
        for s in stores:
            train = store_of != s
            try:
                w_i, w_q = _fit_both(g, train, lambda qi, s=s: records[qi].store != s)
            except InvalidInput:
                continue
            held = _with_models(params, w_i, w_q)
            items, queries = _scores(g, held)
            inj_all.update(_injected(g, items, queries, held, only={qi for qi in items if records[qi].store == s}))
        held_out = metrics.gate_metrics(records, lambda r: inj_all.get(id(r), []))
    item_logits = _predict(np.r_[params.weights, params.bias], g.X)
    order, Q, labels = _query_rows(g, item_logits)
    item_auc = _auc(item_logits, g.y)
    query_auc = _auc(_predict(np.r_[params.query_weights, params.query_bias], Q), labels)
    return params, {"dev": m, "leave_one_conversation_out": held_out, "auc": round(item_auc, 4),
                    "query_auc": round(query_auc, 4), "candidates": int(len(g.y)), "relevant": int(g.y.sum()),
                    "questions_with_candidates": len(order), "questions_with_relevant_on_top": int(labels.sum())}


def _auc(scores: np.ndarray, y: np.ndarray) -> float:
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = y.sum()
    neg = len(y) - pos
    return float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg)) if pos and neg else 0.5


def calibrate(records, *, target_retention: float = 0.96, floor_retention: float = 1.0,
              max_items: int = 3, coverage_grid=COVERAGE_GRID, coverage_weight: float | None = None,
              weights: RankWeights = RankWeights(), ranking_records=None) -> Calibration:
    """Coverage weight, floor and feature gate from one calibrating run's records.

    The coverage weight is swept on `ranking_records` when given (the run with the speakers' names
    intact: real memories carry names, and anonymizing is only there to make the gate's
    cross-conversation test fair), else on `records`. `coverage_weight` overrides the sweep's pick
    (recorded as chosen by hand, with the sweep).
    """
    picked, sweep = sweep_coverage(ranking_records or records, coverage_grid, weights)
    chosen = picked if coverage_weight is None else float(coverage_weight)
    records = rerank(records, replace(weights, coverage=chosen), max((len(r.ranked) for r in records), default=20))
    ranking = {"coverage_weight": chosen, "chosen_by": "sweep" if coverage_weight is None else "hand",
               "swept_on": "the run with names intact" if ranking_records else "the calibrating run",
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


# -- the lexical gate: recall without a query vector ----------------------------------------------

def calibrate_lexical(records, *, target_retention: float = 0.96, max_items: int = 3) -> dict:
    """The gate of recall without a query vector, from a calibrating run with embeddings off.

    The same two models over the same features (the cosine features are all zero there, so they
    get no weight), fitted on what lexical recall ranks: an embedder that is missing, still
    loading, switched off or over its budget must not mean three memories on every turn. The
    result has a model calibration's shape (`feature_gate`, `term_stats`), so recall reads it the
    same way; it belongs to no model and ships with the engine (gate.LEXICAL_CALIBRATION).
    """
    if any(r.mode != "lexical" for r in records):
        raise InvalidInput("the lexical gate is calibrated on a run without query vectors (embeddings off)")
    tops = [r.ranked[:max_items] for r in records]
    gate, report = calibrate_gate(records, tops, target=target_retention)
    return {
        "term_stats": {"min_memories": min((r.stats.size for r in records if getattr(r, "stats", None)
                                            is not None), default=0)},
        "feature_gate": gate.as_calibration(),
        "dev_metrics": {"lexical": report, "target_retention": target_retention},
    }
