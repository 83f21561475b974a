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
from .gate import FEATURES, QUERY_FEATURES, FeatureGateParams, above_floor, features, keeps, query_features

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




def tops_after_floor(records, floor: float, max_items: int, task_floor: float | None = None):
    """Per record: the ranked list the gate would see (after the floor), best first."""
    return [[c for c in r.ranked if above_floor(c.candidate, floor, task_floor)][:max_items] for r in records]


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
    def index(self) -> dict[int, int]:
        """id(record) -> its index."""
        return {id(r): qi for qi, r in enumerate(self.records)}

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
    Q = np.array([[query_features(g.records[qi].plan, g.tops[qi], g.records[qi].stats, per[qi],
                                  g.records[qi].ranked)[k]
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


def is_task(record) -> bool:
    """Whether the gate of task messages decides this record (the message asks for something)."""
    return bool(getattr(getattr(record, "plan", None), "task", False))


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
    """Questions: mean zero-injection over the negative sources plus precision. Task messages
    (whose refusals are a target): the harmonic mean of the share of needed preferences injected
    and precision; a plain sum let precision win by injecting almost nothing (0.10 injected at
    precision 0.86 scored above 0.30 at 0.60)."""
    q, t = m.get(QUESTION_SET), m.get(TASK_SET)
    task = (2 * t["hit_rate"] * t["precision"] / (t["hit_rate"] + t["precision"])
            if t and t["hit_rate"] + t["precision"] > 0 else 0.0)
    return ((_mean_zero(q) + q["precision"]) if q else 0.0) + task


def _grids(values: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Query and item threshold grids: quantiles of the scores they cut."""
    q_grid = np.unique(np.quantile(values, np.linspace(0.2, 0.99, 80))) if len(values) else np.array([0.5])
    i_grid = (np.unique(np.r_[0.0, np.quantile(items, np.linspace(0.02, 0.9, 30))]) if len(items)
              else np.array([0.0]))
    return q_grid, i_grid


@dataclass
class _Gates:
    """Scores of the question gate and (with task data) the task gate, and which records the task
    gate also decides (a task message gets what either gate keeps)."""

    g: GateRows
    question: tuple                 # (items, queries) under the question gate's models
    task: tuple | None              # the same under the task gate's models
    tasks: set                      # record indexes of task messages

    def injected(self, q_params: FeatureGateParams, t_params: FeatureGateParams | None, only=None) -> dict:
        out = _injected(self.g, *self.question, q_params, only=only)
        if self.task is not None and t_params is not None:
            return union(self.g, out, _injected(self.g, *self.task, t_params,
                                                only={qi for qi in self.tasks if only is None or qi in only}))
        return out


def union(g: GateRows, first: dict, more: dict) -> dict:
    """Per record, the ids either decision kept, in the order of its top candidates."""
    out = dict(first)
    for key, ids in more.items():
        if ids:
            kept = set(out.get(key, ())) | set(ids)
            out[key] = [mid for mid in g.ids_by_record[g.index[key]] if mid in kept]
    return out


def _search(run, base: FeatureGateParams, items, queries, met, score, extra_query=()):
    """The (query, item, relative) thresholds of `base` with the best score among those `met` accepts."""
    q_grid, i_grid = _grids(np.array(list(queries.values())), np.array([v for vs in items.values() for v in vs]))
    best = None
    for tq in np.r_[q_grid, list(extra_query)]:
        for ti in i_grid:
            for rho in RELATIVE_GRID:
                params = replace(base, item_threshold=float(ti), query_threshold=float(tq), relative=rho)
                m = run(params)
                if met(m) and (best is None or score(m) > score(best[1])):
                    best = (params, m)
    return best


def choose_thresholds(gates: _Gates, q_base: FeatureGateParams, t_base: FeatureGateParams | None,
                      targets: Targets) -> tuple[FeatureGateParams, dict]:
    """The thresholds with the best objective among those meeting the targets, in two steps.

    First the question gate's thresholds, on the questions' target and objective alone (what a
    calibration without task data picks); then, with task data, the task gate's, on both data
    sets' targets and objectives, the question gate's decisions fixed: a task message gets what
    either gate keeps, so the second step adds to the first and never takes from it.
    """
    g, records = gates.g, gates.g.records

    def metrics_of(inj: dict) -> dict:
        return set_metrics(records, lambda r: inj.get(id(r), []))

    questions_only = Targets(targets.retention, 0.0)
    every = replace(gates, tasks=set())   # the question gate decides every message in this step
    q_items, q_queries = gates.question
    best = _search(lambda p: metrics_of(every.injected(p, None)), q_base, q_items, q_queries, questions_only.met,
                   lambda m: objective({QUESTION_SET: m[QUESTION_SET]}) if QUESTION_SET in m else objective(m))
    if best is None:  # nothing reaches the target: inject whatever the floor lets through
        fallback = replace(q_base, item_threshold=0.0, query_threshold=0.0, relative=0.0)
        best = (fallback, metrics_of(gates.injected(fallback, None)))
    if gates.task is None or t_base is None:
        return best
    fixed = gates.injected(best[0], None)
    t_items = {qi: v for qi, v in gates.task[0].items() if qi in gates.tasks}
    t_queries = {qi: gates.task[1][qi] for qi in t_items}

    def run(t_params):
        return metrics_of(union(g, fixed, _injected(g, t_items, t_queries, t_params)))
    # The task messages' target alone: the question gate's step already met the questions' (the few
    # task messages among the questions, 3 of 760 LoCoMo questions, can move their retention a hair).
    task_only = Targets(0.0, targets.zero_injection)
    found = _search(run, t_base, t_items, t_queries, task_only.met, objective, extra_query=(1.01,))  # 1.01: refuse all
    if found is None:
        return best
    return replace(best[0], task=found[0]), found[1]


def _fit(g: GateRows, rows_mask: np.ndarray, record_ok) -> tuple[np.ndarray, np.ndarray]:
    return _fit_both(g, rows_mask, record_ok)


def calibrate_gate(records, tops, *, target: float, zero_target: float = 0.90) -> tuple[FeatureGateParams, dict]:
    """The gate's models and thresholds from calibrating records (and their top candidates).

    Without task data one gate decides every message (both models fitted on every record). With
    it (PrefEval records), the question gate is fitted on the questions' records alone, exactly as
    without, and the task gate (FeatureGateParams.task) on every message that asks for something;
    each has its own target, and a task message gets what either keeps.
    """
    g = gate_rows(records, tops)
    if not len(g.y) or g.y.sum() == 0 or g.y.sum() == len(g.y):
        raise InvalidInput("too little data to calibrate: the top 3 candidates must include both relevant "
                           "and irrelevant memories; use more conversations or add --negatives files")
    two = any(data_set(r) == TASK_SET for r in records)
    tasks = {qi for qi, r in enumerate(records) if two and is_task(r)}
    row_task = np.array([int(qi) in tasks for qi in g.owner], dtype=bool)
    blank = FeatureGateParams(weights=(), bias=0.0, item_threshold=0.0, query_threshold=0.0, source="calibration")
    row_question = np.array([data_set(records[int(qi)]) == QUESTION_SET or not two for qi in g.owner], dtype=bool)
    w_item, w_query = _fit(g, row_question, lambda qi: data_set(records[qi]) == QUESTION_SET or not two)
    q_base = _with_models(blank, w_item, w_query)
    t_base = _with_models(blank, *_fit(g, row_task, lambda qi: qi in tasks)) if tasks else None
    gates = _Gates(g, _scores(g, q_base), _scores(g, t_base) if t_base else None, tasks)
    # Retention is relative to what the floor alone keeps: the target applies to the ungated injection.
    index = {id(r): qi for qi, r in enumerate(records)}
    ungated = set_metrics(records, lambda r: [c.id for c in tops[index[id(r)]]])
    targets = Targets(target * ungated.get(QUESTION_SET, {}).get("relevant_recall_retained", 1.0), zero_target)
    params, m = choose_thresholds(gates, q_base, t_base, targets)
    held_conversation = _held_out(g, params, tasks, two, lambda r: data_set(r) == QUESTION_SET, lambda r: r.store)
    held_topic = _held_out(g, params, tasks, two, lambda r: data_set(r) == TASK_SET, lambda r: r.topic)
    report = {"dev": m.get(QUESTION_SET, {}),
              "leave_one_conversation_out": held_conversation.get(QUESTION_SET, {}),
              **_fit_report(g, params, row_question, "questions" if tasks else None),
              "targets": {"retention": round(targets.retention, 4), "zero_injection": targets.zero_injection}}
    if TASK_SET in m:
        report["prefeval_dev"] = m[TASK_SET]
        report["leave_one_topic_out"] = held_topic.get(TASK_SET, {})
        if params.task is not None:
            report["task_gate"] = _fit_report(g, params.task, row_task, "task messages")
    return params, report


def _fit_report(g: GateRows, params: FeatureGateParams, rows_mask: np.ndarray, what: str | None) -> dict:
    """AUCs of a gate's two models over the rows (and records) it decides."""
    item_logits = _predict(np.r_[params.weights, params.bias], g.X)
    order, Q, labels = _query_rows(g, item_logits)
    records = {int(qi) for qi, keep in zip(g.owner, rows_mask) if keep}
    mask = np.array([qi in records for qi in order], dtype=bool)
    out = {"auc": round(_auc(item_logits[rows_mask], g.y[rows_mask]), 4),
           "query_auc": round(_auc(_predict(np.r_[params.query_weights, params.query_bias], Q)[mask], labels[mask]), 4),
           "candidates": int(rows_mask.sum()), "relevant": int(g.y[rows_mask].sum()),
           "questions_with_candidates": int(mask.sum()), "questions_with_relevant_on_top": int(labels[mask].sum())}
    if what:
        out["decides"] = what
    return out


def _held_out(g: GateRows, params: FeatureGateParams, tasks: set, two: bool, member, group) -> dict[str, dict]:
    """Leave one group out among the records `member` selects: refit the models without the
    group's records, keep the thresholds, decide the group's records; metrics over them all."""
    records = g.records
    groups = sorted({group(r) for r in records if member(r)})
    if len(groups) < 2:
        return {}
    inj_all: dict[int, list[str]] = {}
    owner_group = [group(records[qi]) if member(records[qi]) else None for qi in g.owner]
    row_task = np.array([int(qi) in tasks for qi in g.owner], dtype=bool)
    question = lambda qi: data_set(records[qi]) == QUESTION_SET or not two  # noqa: E731
    row_question = np.array([question(int(qi)) for qi in g.owner], dtype=bool)
    for s in groups:
        out = np.array([og == s for og in owner_group], dtype=bool)
        left = lambda qi, s=s: not (member(records[qi]) and group(records[qi]) == s)  # noqa: E731
        held = {qi for qi, r in enumerate(records) if member(r) and group(r) == s}
        try:
            q_held = _with_models(params, *_fit(g, row_question & ~out,
                                                lambda qi, left=left: question(qi) and left(qi)))
            t_held = (_with_models(params.task, *_fit(g, row_task & ~out,
                                                      lambda qi, left=left: qi in tasks and left(qi)))
                      if params.task is not None else None)
        except InvalidInput:
            continue
        # no task gate calibrated: the question gate decides the task messages too
        gates = _Gates(g, _scores(g, q_held), _scores(g, t_held) if t_held else None, tasks if t_held else set())
        inj_all.update(gates.injected(q_held, t_held, only=held))
    return set_metrics([r for r in records if member(r)], lambda r: inj_all.get(id(r), []))


def _auc(scores: np.ndarray, y: np.ndarray) -> float:
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = y.sum()
    neg = len(y) - pos
    return float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg)) if pos and neg else 0.5


