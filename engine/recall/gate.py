"""The relevance gate: the cross-encoder when one is installed, else an offline feature gate.

Why netclaw's learned feature gate failed (netclaw-facts §8, design C, OOF AUC 0.545): every
feature (cosine, margin, z-score, length, age) was a view of the same embedding similarity that
already could not tell a relevant memory from a merely similar one, and it was trained on 93 noisy
queries. More views of one weak signal add nothing. This gate adds evidence the embedder does not
see: how much of the query's *rare* content (IDF over this store, after Porter stemming) the memory
actually contains, whether the rarest query word is missing from it, and the lexical channel. It
makes two decisions: a query-level one ("inject anything at all?") with a higher bar for the best
candidate, then one per item. Weights and both thresholds come from the calibration command.
On the anonymized LoCoMo dev data its candidate-level AUC is about 0.88 (leave-one-conversation-out
about the same), against 0.545 for design C; a cosine z-score over the pool (design A's signal)
was tried and dropped: it let long off-topic queries through.

What it cannot do: it does not read meaning. A relevant memory that shares no rare word with a
paraphrased question is refused (that costs retention), and an on-topic memory that shares the
words but does not answer the question is let through (that costs precision: on the dev data it
is only about 2 points more precise than a cosine floor at the same retention). Questions about
a topic that another conversation also discussed get through about 3 times in 10.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .plan import RecallPlan
from .rank import Ranked, squash
from .terms import TermStats, memory_stems

FEATURES = ("cosine", "coverage", "best_uncovered", "lexical", "gap_to_best", "rank", "coverage_gap",
            "lexical_gap", "cosine_x_coverage")


@dataclass(frozen=True)
class FeatureGateParams:
    """Logistic weights over FEATURES and the two thresholds (item, query)."""

    weights: tuple[float, ...]
    bias: float
    item_threshold: float
    query_threshold: float
    lexical_half: float = 8.0
    source: str = "default"

    @classmethod
    def from_calibration(cls, cal: dict | None, *, source: str = "manifest") -> "FeatureGateParams | None":
        fg = (cal or {}).get("feature_gate")
        if not isinstance(fg, dict):
            return None
        try:
            weights = dict(fg["weights"])
            return cls(weights=tuple(float(weights.get(f, 0.0)) for f in FEATURES), bias=float(fg["bias"]),
                       item_threshold=float(fg["item_threshold"]), query_threshold=float(fg["query_threshold"]),
                       lexical_half=float(fg.get("lexical_half", 8.0)), source=source)
        except (KeyError, TypeError, ValueError):
            return None

    def as_calibration(self) -> dict:
        return {"weights": dict(zip(FEATURES, self.weights)), "bias": self.bias,
                "item_threshold": self.item_threshold, "query_threshold": self.query_threshold,
                "lexical_half": self.lexical_half}


@dataclass(frozen=True)
class GateDecision:
    id: str
    score: float
    kept: bool
    reason: str
    features: dict = field(default_factory=dict)


def coverage(idf: dict[str, float], stems: set[str]) -> float:
    """IDF-weighted share of the query's content stems found in a memory."""
    total = sum(idf.values())
    return sum(w for s, w in idf.items() if s in stems) / total if total > 0 else 0.0


def features(plan: RecallPlan, top: list[Ranked], stats: TermStats, lexical_half: float) -> list[dict]:
    """The gate's inputs for each of the top candidates (pure given the term statistics).

    No distribution-shape feature (a cosine z-score over the pool): netclaw's z-score gate
    (design A) fell apart out of sample, and here it let long off-topic queries through.
    """
    idf = stats.weights(plan.content)
    rarest = max(idf.values()) if idf else 0.0
    rows = []
    for r in top:
        c = r.candidate
        stems = memory_stems(c.row.get("title", ""), c.row.get("body", ""))
        uncovered = [w for s, w in idf.items() if s not in stems]
        rows.append((c.cosine if c.cosine is not None else 0.0, coverage(idf, stems),
                     max(uncovered) / rarest if uncovered and rarest > 0 else 0.0,
                     squash(c.lexical, lexical_half)))
    best_cos = max((row[0] for row in rows), default=0.0)
    best_cov = max((row[1] for row in rows), default=0.0)
    best_lex = max((row[3] for row in rows), default=0.0)
    return [{
        "cosine": cos,
        "coverage": cov,
        # The rarest query word this memory lacks, relative to the rarest word of the query.
        "best_uncovered": unc,
        "lexical": lex,
        "gap_to_best": best_cos - cos,
        "rank": float(i),
        "coverage_gap": best_cov - cov,
        "lexical_gap": best_lex - lex,
        "cosine_x_coverage": cos * cov,
    } for i, (cos, cov, unc, lex) in enumerate(rows)]


def logit(params: FeatureGateParams, feats: dict) -> float:
    return params.bias + sum(w * feats[f] for w, f in zip(params.weights, FEATURES))


def probability(params: FeatureGateParams, feats: dict) -> float:
    z = max(-50.0, min(50.0, logit(params, feats)))
    return 1.0 / (1.0 + math.exp(-z))


def decide(scores: list[float], ids: list[str], item_threshold: float, query_threshold: float,
           feats: list[dict] | None = None) -> list[GateDecision]:
    """Inject nothing unless the best clears the query bar; then each item must clear its own."""
    best = max(scores) if scores else 0.0
    out = []
    for i, (mid, s) in enumerate(zip(ids, scores)):
        f = feats[i] if feats else {}
        if best < query_threshold:
            out.append(GateDecision(mid, s, False, f"query below bar ({best:.3f} < {query_threshold:.3f})", f))
        elif s < item_threshold:
            out.append(GateDecision(mid, s, False, f"item below threshold ({s:.3f} < {item_threshold:.3f})", f))
        else:
            out.append(GateDecision(mid, s, True, "kept", f))
    return out


def feature_gate(params: FeatureGateParams, plan: RecallPlan, top: list[Ranked], stats: TermStats) -> list[GateDecision]:
    feats = features(plan, top, stats, params.lexical_half)
    scores = [probability(params, f) for f in feats]
    return decide(scores, [r.id for r in top], params.item_threshold, params.query_threshold, feats)


def cross_encoder_gate(gate, threshold: float, query: str, top: list[Ranked]) -> list[GateDecision]:
    """Score the top candidates jointly with the query; below the threshold is dropped."""
    passages = [r.candidate.text.strip() for r in top]
    scores = [float(s) for s in gate.score(query, passages)]
    return [GateDecision(r.id, s, s >= threshold,
                         "kept" if s >= threshold else f"below threshold ({s:.3f} < {threshold:.3f})")
            for r, s in zip(top, scores)]
