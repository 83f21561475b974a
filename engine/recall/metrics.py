"""Eval metrics, exactly as the recall issue defines them, from the harness's job records.

Retrieval ranks the whole visible store before floor and gate (recall@k, MRR over positives).
Gate: relevant_recall_retained = positives with a relevant memory injected / positives with a
relevant memory in the top 3 before floor and gate; hit_rate = positives with a relevant memory
injected / all positives; precision = relevant injected items / all injected items on positives;
zero-injection = share of negatives with nothing injected (per source).
"""

from __future__ import annotations

from collections import defaultdict

from .rank import RANKINGS, RankWeights, rank


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def share(records, test) -> float:
    """The share of `records` that pass `test` (0 for none), to 4 places."""
    return _r(sum(1 for r in records if test(r)), len(records))


def in_top3(record) -> bool:
    """Whether a relevant memory is among the record's first 3 ranked (before floor and gate)."""
    return any(c.id in record.relevant for c in record.ranked[:3])


def latency(records) -> dict:
    """p50 and p95 of the records' recall time, in ms."""
    times = [r.total_ms for r in records]
    return {"p50": round(percentile(times, 0.5), 2), "p95": round(percentile(times, 0.95), 2)}


def retrieval(positives, order=lambda r: [c.id for c in r.ranked]) -> dict:
    n = len(positives)
    hits = {1: 0, 5: 0, 10: 0}
    rr = 0.0
    for rec in positives:
        ids = order(rec)
        first = next((k for k, i in enumerate(ids, 1) if i in rec.relevant), None)
        if first is not None:
            rr += 1.0 / first
            for k in hits:
                hits[k] += first <= k
    return {"recall@1": _r(hits[1], n), "recall@5": _r(hits[5], n), "recall@10": _r(hits[10], n),
            "mrr": _r(rr, n), "n": n}


def _r(x: float, n: int) -> float:
    return round(x / n, 4) if n else 0.0


def channel_order(method: str, now: int = 0, weights: RankWeights = RankWeights()):
    """Order a record's whole candidate pool by one ranking (raw channels for the baselines)."""
    def order(rec):
        cands = rec.pool
        if method == "bm25":
            cands = [c for c in cands if c.lexical > 0]
        return [r.id for r in rank(cands, now, method=method, weights=weights)]
    return order


def gate_metrics(records, injected=lambda r: r.injected) -> dict:
    positives = [r for r in records if r.kind == "positive"]
    eligible = [r for r in positives if any(c.id in r.relevant for c in r.ranked[:3])]
    hit = [r for r in positives if any(i in r.relevant for i in injected(r))]
    retained = [r for r in eligible if any(i in r.relevant for i in injected(r))]
    inj_pos = [i for r in positives for i in injected(r)]
    rel_inj = sum(1 for r in positives for i in injected(r) if i in r.relevant)
    by_source: dict[str, list[bool]] = defaultdict(list)
    for r in records:
        if r.kind != "positive":
            by_source[r.source].append(not injected(r))
    negs = [r for r in records if r.kind != "positive"]
    return {
        "relevant_recall_retained": _r(len(retained), len(eligible)),
        "hit_rate": _r(len(hit), len(positives)),
        "precision": _r(rel_inj, len(inj_pos)),
        "mean_injected_positive": _r(len(inj_pos), len(positives)),
        "mean_injected_negative": _r(sum(len(injected(r)) for r in negs), len(negs)),
        "n_positive": len(positives),
        "n_eligible": len(eligible),
        "zero_injection": {s: _r(sum(v), len(v)) for s, v in sorted(by_source.items())},
    }


def floor_only(records, max_items: int = 3):
    """Injection by a cosine floor alone over the shipped ranking's top items (the baseline gate)."""
    def make(floor: float):
        def injected(rec):
            out = [c.id for c in rec.ranked if c.candidate.cosine is not None and c.candidate.cosine >= floor]
            return out[:max_items]
        return injected
    return make


def floor_only_at_retention(records, target: float, max_items: int = 3) -> dict:
    """The highest cosine floor whose retention is still >= target, and its gate metrics."""
    make = floor_only(records, max_items)
    cosines = sorted({round(c.candidate.cosine, 4) for r in records if r.kind == "positive"
                      for c in r.ranked[:max_items] if c.candidate.cosine is not None})
    best = None
    lo, hi = 0, len(cosines) - 1
    while lo <= hi:  # retention falls as the floor rises: binary search the last floor that keeps it
        mid = (lo + hi) // 2
        m = gate_metrics(records, make(cosines[mid]))
        if m["relevant_recall_retained"] >= target:
            best, lo = (cosines[mid], m), mid + 1
        else:
            hi = mid - 1
    if best is None:
        return {"floor": None}
    return {"floor": best[0], **best[1]}


def summarize(records, *, config: dict, baseline: bool = False, compare_rankings: bool = False,
              now: int = 0) -> dict:
    positives = [r for r in records if r.kind == "positive"]
    out = {"retrieval": retrieval(positives)}
    if baseline or compare_rankings:
        out["baselines"] = {"cosine": retrieval(positives, channel_order("cosine")),
                            "bm25": retrieval(positives, channel_order("bm25"))}
    if compare_rankings:
        out["rankings"] = {m: retrieval(positives, channel_order(m, now)) for m in RANKINGS}
    out["gate"] = gate_metrics(records)
    if baseline:
        out["baselines"]["floor_only_gate"] = floor_only_at_retention(
            records, out["gate"]["relevant_recall_retained"])
    times = [r.total_ms for r in records]
    out["latency_ms"] = {"p50": round(percentile(times, 0.5), 2), "p95": round(percentile(times, 0.95), 2),
                         "n": len(times)}
    out["degraded"] = degraded_counts(records)
    out["config"] = config
    return out


def degraded_counts(records) -> dict[str, int]:
    """How many recalls degraded, per stage (the part of each reason before its colon)."""
    counts: dict[str, int] = defaultdict(int)
    for r in records:
        for d in r.degraded:
            counts[d.split(":")[0]] += 1
    return dict(counts)
