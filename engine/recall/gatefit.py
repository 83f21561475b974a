"""Fitting the offline gate: two logistic models and the thresholds that turn them into decisions.

The calibration command's gate step (calibrate.py runs the ranking and the floor first). On the
records of calibrating runs, each question's top candidates after the floor:
- item model: L2-regularized logistic regression (Newton) of "this top candidate is relevant" on
  gate.FEATURES, over positives and negatives alike;
- query model: the same regression of "this question's top candidates hold a relevant memory" on
  gate.QUERY_FEATURES (the best item logit among them), over every question;
- thresholds: on grids of score quantiles, the (query, item, relative) triple with the best
  objective among those that meet every data set's target; task messages get a triple of their
  own (gate.FeatureGateParams.task).

The records may mix two kinds of data, each with its own target, so that neither is sacrificed to
the other: questions about the past (LoCoMo: keep `target` of the relevant recalls the floor alone
would make, then refuse as many negatives and be as precise as possible) and task messages that
need a stated preference (PrefEval, records with a topic: refuse at least `zero_target` of the
questions whose topic the store lacks, then inject as many needed preferences, as precisely, as
possible). Held-out quality: leave one LoCoMo conversation out and leave one PrefEval topic out
(both models refit without it, thresholds kept).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from ..errors import InvalidInput
from . import metrics
from .gate import FEATURES, QUERY_FEATURES, FeatureGateParams, features, keeps, query_features

L2 = 1.0
RELATIVE_GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
TASK_SET = "prefeval"
QUESTION_SET = "locomo"


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




def tops_after_floor(records, floor: float, max_items: int):
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


def _scores(g: GateRows, params: FeatureGateParams) -> tuple[dict[int, list[float]], dict[int, float], dict[int, bool]]:
    """Item probabilities, the query score and whether it is a task message, per record with candidates."""
    w_item = np.r_[params.weights, params.bias]
    logits = _predict(w_item, g.X)
    items = g.by_record(1.0 / (1.0 + np.exp(-np.clip(logits, -50, 50))))
    order, Q, _ = _query_rows(g, logits)
    tasks = {qi: bool(Q[n, QUERY_FEATURES.index("task")]) for n, qi in enumerate(order)}
    if params.query_weights is None:
        return items, {qi: max(items[qi]) for qi in order}, tasks
    q = _predict(np.r_[params.query_weights, params.query_bias], Q)
    return items, {qi: float(v) for qi, v in zip(order, 1.0 / (1.0 + np.exp(-np.clip(q, -50, 50))))}, tasks


def _injected(g: GateRows, items, queries, tasks, params: FeatureGateParams, only=None) -> dict[int, list[str]]:
    ids = g.ids_by_record
    out = {}
    for qi, vs in items.items():
        if only is not None and qi not in only:
            continue
        item_t, query_t, relative = params.thresholds(tasks[qi])
        mask = keeps(vs, queries[qi], item_t, query_t, relative)
        out[id(g.records[qi])] = [mid for mid, k in zip(ids[qi], mask) if k]
    return out


def data_set(record) -> str:
    """Which kind of data a record is: a task message needing a preference (it has a topic) or a
    question about the past."""
    return TASK_SET if getattr(record, "topic", "") else QUESTION_SET


def set_metrics(records, injected) -> dict[str, dict]:
    """gate_metrics per data set present in the records."""
    out = {}
    for name in (QUESTION_SET, TASK_SET):
        subset = [r for r in records if data_set(r) == name]
        if subset:
            out[name] = metrics.gate_metrics(subset, injected)
    return out


@dataclass(frozen=True)
class Targets:
    """What the thresholds must keep on each data set."""

    retention: float               # questions: relevant_recall_retained at least this
    zero_injection: float = 0.90   # task messages: refuse at least this share of absent-topic questions

    def met(self, m: dict[str, dict]) -> bool:
        q, t = m.get(QUESTION_SET), m.get(TASK_SET)
        return ((q is None or q["relevant_recall_retained"] >= self.retention)
                and (t is None or _mean_zero(t) >= self.zero_injection))


def _mean_zero(m: dict) -> float:
    zero = list(m["zero_injection"].values())
    return sum(zero) / len(zero) if zero else 0.0


def objective(m: dict[str, dict]) -> float:
    """Questions: mean zero-injection over the negative sources plus precision. Task messages:
    the share of needed preferences injected plus precision."""
    q, t = m.get(QUESTION_SET), m.get(TASK_SET)
    return ((_mean_zero(q) + q["precision"]) if q else 0.0) + ((t["hit_rate"] + t["precision"]) if t else 0.0)


def _grids(values: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Query and item threshold grids: quantiles of the scores they cut."""
    q_grid = np.unique(np.quantile(values, np.linspace(0.2, 0.99, 80))) if len(values) else np.array([0.5])
    i_grid = (np.unique(np.r_[0.0, np.quantile(items, np.linspace(0.02, 0.9, 30))]) if len(items)
              else np.array([0.0]))
    return q_grid, i_grid


def choose_thresholds(g: GateRows, base: FeatureGateParams, targets: Targets) -> tuple[FeatureGateParams, dict]:
    """The thresholds with the best objective among those meeting the targets, in two steps.

    First the (query, item, relative) thresholds of every message, on the questions' target and
    objective alone (what a calibration without task data picks); then, with task data, the task
    messages' own thresholds, on both data sets' targets and objectives. A task message's decision
    depends only on the task thresholds, so the second step cannot undo the first for questions.
    """
    items, queries, tasks = _scores(g, base)
    records = g.records

    def run(params: FeatureGateParams) -> dict:
        inj = _injected(g, items, queries, tasks, params)
        return set_metrics(records, lambda r: inj.get(id(r), []))

    def search(make, q_grid, i_grid, met, score):
        best = None
        for tq in q_grid:
            for ti in i_grid:
                for rho in RELATIVE_GRID:
                    params = make(float(ti), float(tq), rho)
                    m = run(params)
                    if met(m) and (best is None or score(m) > score(best[1])):
                        best = (params, m)
        return best

    q_grid, i_grid = _grids(np.array(list(queries.values())), np.array([v for vs in items.values() for v in vs]))
    questions_only = Targets(targets.retention, 0.0)
    best = search(lambda ti, tq, rho: replace(base, item_threshold=ti, query_threshold=tq, relative=rho, task=None),
                  q_grid, i_grid, questions_only.met, lambda m: objective({QUESTION_SET: m[QUESTION_SET]})
                  if QUESTION_SET in m else objective(m))
    if best is None:  # nothing reaches the target: inject whatever the floor lets through
        best = (replace(base, item_threshold=0.0, query_threshold=0.0, relative=0.0, task=None), None)
        best = (best[0], run(best[0]))
    if not any(data_set(r) == TASK_SET for r in records):
        return best
    task_qi = [qi for qi, t in tasks.items() if t]
    q_grid, i_grid = _grids(np.array([queries[qi] for qi in task_qi]),
                            np.array([v for qi in task_qi for v in items[qi]]))
    q_grid = np.r_[q_grid, 1.0]  # refusing every task message is always an option
    found = search(lambda ti, tq, rho: replace(best[0], task=(ti, tq, rho)), q_grid, i_grid, targets.met, objective)
    return found or best


def calibrate_gate(records, tops, *, target: float, zero_target: float = 0.90) -> tuple[FeatureGateParams, dict]:
    """Both models and the thresholds from calibrating records (and their top candidates)."""
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
    ungated = set_metrics(records, lambda r: [c.id for c in tops[index[id(r)]]])
    targets = Targets(target * ungated.get(QUESTION_SET, {}).get("relevant_recall_retained", 1.0), zero_target)
    params, m = choose_thresholds(g, base, targets)
    held_conversation = _held_out(g, params, lambda r: data_set(r) == QUESTION_SET, lambda r: r.store)
    held_topic = _held_out(g, params, lambda r: data_set(r) == TASK_SET, lambda r: r.topic)
    item_logits = _predict(np.r_[params.weights, params.bias], g.X)
    order, Q, labels = _query_rows(g, item_logits)
    report = {"dev": m.get(QUESTION_SET, {}),
              "leave_one_conversation_out": held_conversation.get(QUESTION_SET, {}),
              "auc": round(_auc(item_logits, g.y), 4),
              "query_auc": round(_auc(_predict(np.r_[params.query_weights, params.query_bias], Q), labels), 4),
              "candidates": int(len(g.y)), "relevant": int(g.y.sum()),
              "questions_with_candidates": len(order), "questions_with_relevant_on_top": int(labels.sum()),
              "targets": {"retention": round(targets.retention, 4), "zero_injection": targets.zero_injection}}
    if TASK_SET in m:
        report["prefeval_dev"] = m[TASK_SET]
        report["leave_one_topic_out"] = held_topic.get(TASK_SET, {})
    return params, report


def _held_out(g: GateRows, params: FeatureGateParams, member, group) -> dict[str, dict]:
    """Leave one group out among the records `member` selects: refit both models without the
    group's records, keep the thresholds, decide the group's records; metrics over them all."""
    records = g.records
    groups = sorted({group(r) for r in records if member(r)})
    if len(groups) < 2:
        return {}
    inj_all: dict[int, list[str]] = {}
    owner_group = [group(records[qi]) if member(records[qi]) else None for qi in g.owner]
    for s in groups:
        train = np.array([og != s for og in owner_group], dtype=bool)
        try:
            w_i, w_q = _fit_both(g, train, lambda qi, s=s: not (member(records[qi]) and group(records[qi]) == s))
        except InvalidInput:
            continue
        held = _with_models(params, w_i, w_q)
        items, queries, tasks = _scores(g, held)
        inj_all.update(_injected(g, items, queries, tasks, held,
                                 only={qi for qi in items if member(records[qi]) and group(records[qi]) == s}))
    return set_metrics([r for r in records if member(r)], lambda r: inj_all.get(id(r), []))


def _auc(scores: np.ndarray, y: np.ndarray) -> float:
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = y.sum()
    neg = len(y) - pos
    return float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg)) if pos and neg else 0.5


