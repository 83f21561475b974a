"""The relevance gate: the cross-encoder when one is installed, else an offline feature gate.

Why netclaw's learned feature gate failed (netclaw-facts §8, design C, OOF AUC 0.545): every
feature (cosine, margin, z-score, length, age) was a view of the same embedding similarity that
already could not tell a relevant memory from a merely similar one, it was trained on 93 noisy
queries, and one model made one decision. This gate adds evidence the embedder does not see: how
much of the message's *rare* content (IDF over this store, after Porter stemming) a memory
contains, whether the rarest word is missing from it, whether the message's word pairs appear as
phrases, the lexical channel's rank. And it splits the decision in two, each a logistic model fitted by
the calibration command on thousands of dev questions:
- the query model ("does the top of this ranking hold anything relevant at all?") reads the best
  item's score, how much of the message's rare content this store knows anything about, the
  message's length and rarity and the best cosine; below its bar nothing is injected;
- the item model ("is this candidate relevant?") reads each of the top 3, including where its
  cosine stands in the head of this message's ranking (z-score, rank, margin over the 4th); an
  item is kept above its threshold and when it is at least a share of the best item's score.
A cosine z-score as a *query-level* signal (design A) let long off-topic messages through; here
the relative features only compare candidates of one message, and the query model's CISI
refusals stay at about 0.99.

On the anonymized LoCoMo dev data (facts mode) the item model's AUC is about 0.89 and the query
model's about 0.91; at the calibrated retention (0.96) the gate is about 4 points more precise
than a cosine floor alone and refuses about 73 in 100 questions asked of another conversation
(leave-one-conversation-out: within 1 point of each).

What it cannot do: it does not read meaning. A relevant memory that shares no rare word with a
paraphrased message is refused (that costs retention), and an on-topic memory that shares the
words but does not answer is let through (precision stays under 0.3: most injections on
answerable questions are still not the fact asked for). Questions about a topic another
conversation also discussed get through about 1 time in 4. It was fitted on questions: a task
message ("I need a flight from Boston to Chicago...") that leans on background preferences gets
the closest preference, not every one that would help (profiles.py brings in the rest of a kept
preference's profile), and when most of the message's rare words are new to the store (Chicago,
Friday, client, meeting) the query model can refuse it outright, profile or not.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist

from ..stance import account, caution, current_part, instruction_verb
from ..writepath.entities import PETS, ROLE
from .plan import RecallPlan, content_stems, content_words
from .rank import Ranked
from .stem import stem
from .terms import TermStats, keyword_stems

# Per candidate: is this memory relevant to the message?
# No FTS5 bm25 score among them: its IDF reads the store's real size, so on a new install's
# handful of memories every match scores about 0 (coverage reads the floored term statistics).
FEATURES = ("cosine", "coverage", "best_uncovered", "gap_to_best", "rank", "coverage_gap",
            "cosine_x_coverage", "phrase", "cosine_z", "cosine_rank", "cosine_over_4th",
            "length", "lexical_rank", "covered_terms", "task", "task_standing", "task_standing_cosine",
            "task_standing_z")
# Per message: does the top of the ranking hold anything relevant at all?
QUERY_FEATURES = ("best", "known", "terms", "max_cosine", "mean_idf", "task", "task_standing_cosine",
                  "task_standing_z")
CONTEXT = 20          # how much of the ranking the relative features compare a candidate with
# The gate of recall without a query vector (`keepmind recall calibrate --lexical` writes it).
LEXICAL_CALIBRATION = Path(__file__).with_name("lexical_gate.json")
NO_LEXICAL_RANK = 50  # the lexical rank of a candidate the lexical channel did not return
MIN_STANDING = 3      # standing statements the task features compare a candidate with (fewer: no reading)
# How often a message the store knows nothing of may get a memory from Surprise.pick_any: the bar on
# off-topic questions (CISI zero-injection >= 0.99). With the task rule's 0.1 for task messages, eval
# scenarios' zero-injection fell 0.823 -> 0.761 (test) for needed memories injected 0.504 -> 0.577;
# with 0.01 for every message, 0.808 for 0.550, and precision 0.642 -> 0.644.
ANY_ALPHA = 0.01
_NORMAL = NormalDist()
# Someone by their tie to the user, or their pet: in a task ("for my son", "my dog"), in a memory
# ("User's son Kiran", "my manager", "My dog is called Rex.").
_WHICH = r"(?:(?:older|younger|eldest|youngest|little|big|best|new)\s+)?"
_MY_ROLE = re.compile(rf"\b(?:my|our)\s+{_WHICH}({ROLE}|{PETS})s?\b", re.I)
_THEIR_ROLE = re.compile(rf"\b(?:my|our|user's|the\s+user's)\s+{_WHICH}({ROLE}|{PETS})s?\b", re.I)


@dataclass(frozen=True)
class FeatureGateParams:
    """Two logistic models and the thresholds that turn them into decisions.

    The item model scores each candidate over FEATURES; the query model scores the message over
    QUERY_FEATURES (its first input is the best item's logit). Nothing is injected unless the
    query score clears `query_threshold`; then an item is kept when its own score clears
    `item_threshold` and is at least `relative` times the best item's. A calibration without a
    query model (an older manifest) uses the best item's score as the query score.

    A task message (stance.asks_for_help) also goes through a gate of its own when the
    calibration gives one (`task`: models and thresholds fitted on task messages that need a
    stated preference, with a target of their own) and gets what either keeps; the question gate
    was fitted on questions about the past. One gate fitted on both let through more of the
    off-topic questions (CISI zero-injection 0.984 instead of 0.993) and still could not meet the
    task messages' target.
    """

    weights: tuple[float, ...]
    bias: float
    item_threshold: float
    query_threshold: float
    source: str = "default"
    query_weights: tuple[float, ...] | None = None
    query_bias: float = 0.0
    relative: float = 0.0
    task: "FeatureGateParams | None" = None   # the gate of task messages
    surprise: "Surprise | None" = None       # a task gate's rule for a standing statement that stands out


    @classmethod
    def from_calibration(cls, cal: dict | None, *, source: str = "manifest") -> "FeatureGateParams | None":
        fg = (cal or {}).get("feature_gate")
        if not isinstance(fg, dict):
            return None
        try:
            weights = dict(fg["weights"])
            query = fg.get("query_model")
            qw = dict(query["weights"]) if isinstance(query, dict) else None
            return cls(weights=tuple(float(weights.get(f, 0.0)) for f in FEATURES), bias=float(fg["bias"]),
                       item_threshold=float(fg["item_threshold"]), query_threshold=float(fg["query_threshold"]),
                       source=source,
                       query_weights=tuple(float(qw.get(f, 0.0)) for f in QUERY_FEATURES) if qw else None,
                       query_bias=float(query["bias"]) if qw else 0.0,
                       relative=float(fg.get("relative", 0.0)),
                       task=cls.from_calibration({"feature_gate": fg["task"]}, source=source)
                       if isinstance(fg.get("task"), dict) else None,
                       surprise=Surprise.from_calibration(fg.get("surprise")))
        except (KeyError, TypeError, ValueError):
            return None

    def as_calibration(self) -> dict:
        out = {"weights": dict(zip(FEATURES, self.weights)), "bias": self.bias,
               "item_threshold": self.item_threshold, "query_threshold": self.query_threshold,
               "relative": self.relative}
        if self.query_weights is not None:
            out["query_model"] = {"weights": dict(zip(QUERY_FEATURES, self.query_weights)), "bias": self.query_bias}
        if self.task is not None:
            out["task"] = self.task.as_calibration()
        if self.surprise is not None:
            out["surprise"] = self.surprise.as_calibration()
        return out


@dataclass(frozen=True)
class Surprise:
    """Keep a task message's standing statement, in a store small enough to have been seen whole,
    when chance alone would rarely score it so high.

    The task gate reads where a standing statement's cosine stands among the others at the head of
    the ranking, and it learnt from stores of hundreds of memories with twenty of them: in a store of
    one or two, a preference well clear of chance ("Book me a flight to Berlin next week." and "I
    always prefer a window seat when I fly.", cosine 0.28, where an unrelated one scores about 0.10)
    reads like the best of twenty unrelated ones and is refused; in a newcomer's store of seven with
    five preferences (the seat, peanuts, three about drinks) its query model refused the seat too
    (0.010 under a bar of 0.124: it learnt that a message's words are known to a store that has
    something on them). So when the vector channel saw every memory the scope may recall (it found
    fewer than it asked for), this rule decides them as well, however many there are (the bar rises
    with each; with twenty, 0.3 is chance): with `mean` and `sd` the cosines of task messages to preferences
    that do not bear on them (the calibration measures them on its task data, every question against
    every preference of another topic), the chance that the best of the n standing statements scores
    at least this cosine is 1 - Phi(z)^n, and it is kept below `alpha`, which is the share of
    questions whose topic the store lacks that the calibration lets through (1 - its zero-injection
    target): an unrelated task gets a preference at most that often here too.
    """

    mean: float
    sd: float
    alpha: float

    @classmethod
    def from_calibration(cls, found) -> "Surprise | None":
        try:
            out = cls(float(found["mean"]), float(found["sd"]), float(found["alpha"]))
        except (KeyError, TypeError, ValueError):
            return None
        return out if out.sd > 0 and 0 < out.alpha < 1 else None

    def as_calibration(self) -> dict:
        return {"mean": self.mean, "sd": self.sd, "alpha": self.alpha}

    def chance(self, cosine: float, n: int) -> float:
        """The chance that the best of `n` unrelated standing statements scores at least `cosine`."""
        return 1.0 - _NORMAL.cdf((cosine - self.mean) / self.sd) ** max(1, n)

    def pick(self, top: list[Ranked], context: list[Ranked], seen_all: bool,
             excluded: int = 0) -> tuple[str, float, int] | None:
        """The id of the best task-matched standing statement in `top`, its chance and the number of
        standing statements, when the rule applies (`seen_all`: `context`, every candidate, holds
        every memory the scope may recall but the `excluded` ones, already injected in the session,
        which are counted as standing statements too) and the chance is below alpha."""
        if not seen_all:  # most recalls: nothing to count
            return None
        n = sum(1 for r in context if r.candidate.for_task and r.candidate.standing) + excluded
        best = max((r for r in top if r.candidate.for_task and r.candidate.standing and r.candidate.cosine is not None),
                   key=lambda r: r.candidate.cosine, default=None)
        if best is None:
            return None
        p = self.chance(best.candidate.cosine, n)
        return (best.id, p, n) if p < self.alpha else None

    def pick_any(self, top: list[Ranked], context: list[Ranked], seen_all: bool,
                 excluded: int = 0) -> tuple[str, float, int] | None:
        """The same rule for any message in a store small enough that the vector channel saw every
        memory: the top candidate by cosine, when the best of the n memories the scope may recall
        would rarely score so high by chance.

        The query model learnt "is this message about this store at all" from stores of hundreds of
        memories, where a message's words are known to the store when it has something on them. In a
        store of a few dozen it knows almost no word, so it refused "Do I have any food allergies?"
        against "I am allergic to peanuts." (cosine 0.59; "allergies" and "allergic" stem apart) and
        "Which editor do I use?" against "I write code in Neovim." (0.42); an unrelated memory scores
        about 0.10 (`mean`). The null is the task rule's; n counts every memory, so the bar rises as
        the store grows, and a message the store knows nothing of ("what is the capital of Peru?",
        best 0.16) is kept out as before. Its alpha is ANY_ALPHA, not the task rule's: it reads
        every memory, not the standing statements alone."""
        if not seen_all:
            return None
        best = max((r for r in top if r.candidate.cosine is not None), key=lambda r: r.candidate.cosine, default=None)
        if best is None:
            return None
        n = len(context) + excluded
        p = self.chance(best.candidate.cosine, n)
        return (best.id, p, n) if p < ANY_ALPHA else None


@dataclass(frozen=True)
class GateDecision:
    id: str
    score: float
    kept: bool
    reason: str
    features: dict = field(default_factory=dict)


def above_floor(c, floor: float, task_floor: float | None = None) -> bool:
    """Whether a candidate passes the cosine floor: a task message's standing statement passes the
    task floor when there is one; a candidate without a vector is not floored."""
    if c.cosine is None:
        return True
    if task_floor is not None and c.for_task and c.standing:
        return c.cosine >= task_floor
    return c.cosine >= floor


def coverage(idf: dict[str, float], stems: set[str]) -> float:
    """IDF-weighted share of the query's content stems found in a memory."""
    total = sum(idf.values())
    return sum(w for s, w in idf.items() if s in stems) / total if total > 0 else 0.0


def stem_sequence(text: str) -> list[str]:
    return [stem(w) for w in content_words(text)]


def features(plan: RecallPlan, top: list[Ranked], stats: TermStats,
             context: list[Ranked] | None = None) -> list[dict]:
    """The item model's inputs for each of the top candidates (pure given the term statistics).

    `context` is the head of the ranking (before the floor) that the relative cosine features
    compare a candidate with; by default the candidates themselves. Each candidate's lexical
    features read the part of the message it was matched with (plan.part).
    """
    parts = {}
    pool = [r.candidate.cosine or 0.0 for r in (context or top)[:CONTEXT]]
    mean = sum(pool) / len(pool) if pool else 0.0
    spread = max(1e-3, math.sqrt(sum((x - mean) ** 2 for x in pool) / len(pool))) if pool else 1.0
    fourth = sorted(pool, reverse=True)[3] if len(pool) > 3 else 0.0
    standing_stats = _standing_spread(context or top)
    rows = []
    for r in top:
        c = r.candidate
        if c.segment not in parts:
            part = plan.part(c.segment)
            idf = stats.weights(part.content)
            query_seq = stem_sequence(part.query)
            parts[c.segment] = (idf, max(idf.values()) if idf else 0.0, set(zip(query_seq, query_seq[1:])))
        idf, rarest, query_pairs = parts[c.segment]
        seq = stem_sequence(c.text)
        stems = set(seq) | keyword_stems(c.row)
        uncovered = [w for s, w in idf.items() if s not in stems]
        rows.append((c.cosine if c.cosine is not None else 0.0, coverage(idf, stems),
                     max(uncovered) / rarest if uncovered and rarest > 0 else 0.0,
                     len(query_pairs & set(zip(seq, seq[1:]))) / len(query_pairs) if query_pairs else 0.0,
                     len(seq), c.lexical_rank or NO_LEXICAL_RANK, sum(1 for s in idf if s in stems),
                     float(c.for_task), float(c.for_task and c.standing), standing_z(c, standing_stats)))
    best_cos = max((row[0] for row in rows), default=0.0)
    best_cov = max((row[1] for row in rows), default=0.0)
    return [{
        "cosine": cos,
        "coverage": cov,
        # The rarest query word this memory lacks, relative to the rarest word of the query.
        "best_uncovered": unc,
        "gap_to_best": best_cos - cos,
        "rank": float(i),
        "coverage_gap": best_cov - cov,
        "cosine_x_coverage": cos * cov,
        # Adjacent query words adjacent in the memory too (a phrase, not just the words).
        "phrase": phrase,
        # Where the candidate stands among the head of the ranking (within one message only).
        "cosine_z": (cos - mean) / spread,
        "cosine_rank": float(sum(1 for x in pool if x > cos)),
        "cosine_over_4th": cos - fourth,
        "length": math.log1p(length),
        "lexical_rank": lex_rank / 10.0,
        "covered_terms": float(covered),
        # A task message and a standing statement of the user (stance.py): the preference a task
        # needs shares few words with it, so its cosine is read apart from the others'.
        "task": task,
        "task_standing": task_standing,
        "task_standing_cosine": task_standing * cos,
        # How far its cosine stands above the other standing statements at the head of the ranking:
        # a task in a domain the user has preferences about finds a few of them well above the rest;
        # a task in a domain the store knows nothing of finds them all alike.
        "task_standing_z": stz,
    } for i, (cos, cov, unc, phrase, length, lex_rank, covered, task, task_standing, stz) in enumerate(rows)]


def _standing_spread(context: list[Ranked]) -> tuple[float, float] | None:
    """Mean and spread of the cosines of the task message's standing statements at the head of the
    ranking (CONTEXT candidates), or None when there are fewer than three of them."""
    pool = [r.candidate.cosine for r in context[:CONTEXT]
            if r.candidate.for_task and r.candidate.standing and r.candidate.cosine is not None]
    if len(pool) < MIN_STANDING:
        return None
    mean = sum(pool) / len(pool)
    return mean, max(0.02, math.sqrt(sum((x - mean) ** 2 for x in pool) / len(pool)))


def standing_z(c, spread: tuple[float, float] | None) -> float:
    """A task message's standing statement: its cosine's z-score among the standing statements at the
    head of the ranking (0 for anything else, or without enough of them to compare)."""
    if spread is None or not (c.for_task and c.standing) or c.cosine is None:
        return 0.0
    return (c.cosine - spread[0]) / spread[1]


def logit(params: FeatureGateParams, feats: dict) -> float:
    return params.bias + sum(w * feats[f] for w, f in zip(params.weights, FEATURES))


def sigmoid(z: float) -> float:
    z = max(-50.0, min(50.0, z))
    return 1.0 / (1.0 + math.exp(-z))


def probability(params: FeatureGateParams, feats: dict) -> float:
    return sigmoid(logit(params, feats))


def query_features(plan: RecallPlan, top: list[Ranked], stats: TermStats, logits: list[float],
                   context: list[Ranked] | None = None) -> dict:
    """The query model's inputs: how good the best candidate is, and how much of the message's
    rare content this store knows anything about (a message about things no memory mentions is
    not about this store). For a message of several parts, the content is the part the best
    candidate matched: a second topic the store never heard of does not silence the first."""
    best = max(range(len(logits)), key=lambda i: logits[i]) if logits and top else None
    part = plan.part(top[best].candidate.segment) if best is not None else plan
    idf = stats.weights(part.content)
    total = sum(idf.values())
    spread = _standing_spread(context or top)
    return {
        "best": max(-50.0, min(50.0, max(logits))) if logits else -50.0,
        "known": sum(w for s, w in idf.items() if stats.holds(s)) / total if total > 0 else 0.0,
        "terms": math.log1p(len(idf)),
        "max_cosine": max((r.candidate.cosine or 0.0 for r in top), default=0.0),
        "mean_idf": total / len(idf) if idf else 0.0,
        "task": float(part.task),
        "task_standing_cosine": max((r.candidate.cosine or 0.0 for r in top
                                     if r.candidate.for_task and r.candidate.standing), default=0.0),
        "task_standing_z": max((standing_z(r.candidate, spread) for r in top), default=0.0),
    }


def query_score(params: FeatureGateParams, qfeats: dict, scores: list[float]) -> float:
    if params.query_weights is None:
        return max(scores) if scores else 0.0
    return sigmoid(params.query_bias + sum(w * qfeats[f] for w, f in zip(params.query_weights, QUERY_FEATURES)))


def keeps(scores: list[float], query: float, item_threshold: float, query_threshold: float,
          relative: float = 0.0) -> list[bool]:
    """The gate's rule: nothing unless the query score clears its bar; then each item must clear
    its own threshold and be at least `relative` times the best item's score."""
    best = max(scores, default=0.0)
    return [query >= query_threshold and s >= item_threshold and s >= relative * best for s in scores]


def decide(scores: list[float], ids: list[str], item_threshold: float, query_threshold: float,
           feats: list[dict] | None = None, *, query: float | None = None, relative: float = 0.0) -> list[GateDecision]:
    """`keeps`, with the reason for each decision (without a query score, the best item's)."""
    best = max(scores) if scores else 0.0
    q = best if query is None else query
    kept = keeps(scores, q, item_threshold, query_threshold, relative)
    out = []
    for i, (mid, s) in enumerate(zip(ids, scores)):
        f = feats[i] if feats else {}
        if kept[i]:
            out.append(GateDecision(mid, s, True, "kept", f))
        elif q < query_threshold:
            out.append(GateDecision(mid, s, False, f"query below bar ({q:.3f} < {query_threshold:.3f})", f))
        elif s < item_threshold:
            out.append(GateDecision(mid, s, False, f"item below threshold ({s:.3f} < {item_threshold:.3f})", f))
        else:
            out.append(GateDecision(mid, s, False, f"item far below the best ({s:.3f} < {relative:.2f} x {best:.3f})",
                                    f))
    return out


def feature_gate(params: FeatureGateParams, plan: RecallPlan, top: list[Ranked], stats: TermStats,
                 context: list[Ranked] | None = None, seen_all: bool = False, excluded: int = 0) -> list[GateDecision]:
    """The offline gate's decisions; a task message gets what the question gate or the task gate
    keeps (the task gate adds the standing preferences a task needs, the question gate still keeps
    what the task names: the home airport of "a flight from Boston"), and in a store small enough
    to have been seen whole, what the task gate's Surprise rule keeps
    (`seen_all`: `context` holds every memory the scope may recall but `excluded` ones)."""
    decisions = _one_gate(params, plan, top, stats, context)
    rule = params.task.surprise if params.task is not None else None
    if params.task is not None and plan.task:
        extra = _one_gate(params.task, plan, top, stats, context)
        decisions = [d if d.kept or not e.kept else GateDecision(e.id, e.score, True, "kept by the task gate",
                                                                 e.features)
                     for d, e in zip(decisions, extra)]
        found = rule.pick(top, context or top, seen_all, excluded) if rule is not None else None
        decisions = _kept_by(decisions, found, "standing statements")
    if rule is not None:  # any message, in a store small enough to have been seen whole
        decisions = _kept_by(decisions, rule.pick_any(top, context or top, seen_all, excluded), "memories")
    if plan.task:
        decisions = _named_by_the_task(decisions, top, plan)
    return decisions


def _named_by_the_task(decisions: list[GateDecision], top: list[Ranked], plan: RecallPlan) -> list[GateDecision]:
    """A task's candidates that state an allergy or intolerance, a standing instruction, or what the
    user is called on a service, and contain a content word of the part of the task they matched,
    kept whatever the models said ("Clone my dotfiles repo from GitHub." refused "User's GitHub handle
    is dkowalski.", 0.012 under the bar). A
    walk's "Order me a Thai takeaway with peanut sauce." ranked "I'm allergic to peanuts." first,
    and the query model refused it (0.034 under a bar of 0.124: it learnt from questions about the
    past); a coding agent's "Add some debug output…" refused "Never use print debugging in this
    repo, use the logger." and "Format the greeting string…" refused "Always use f-strings instead
    of .format()…". An unneeded one costs a line of context; a missed one, what the user cannot eat
    or the rule of their repo. An instruction is named by more than its own verb: "Write a limerick about
    coffee." does not name "Always write emails to suppliers in a formal tone.". A person is named by
    their tie to the user: "Plan a birthday party for my son." refused "User's son Kiran is 9 and plays
    football on Saturdays."."""
    found = {r.id: r.candidate for r in top}
    out = []
    for d in decisions:
        c = found.get(d.id)
        now = "" if d.kept or c is None else current_part(c.row.get("body") or "")
        why = None if d.kept or c is None or d.features.get("covered_terms", 0) < 1 else (
            "a caution the task names" if caution(c.text) else
            "an instruction the task names" if _names_more_than_its_verb(plan, now) else
            "an account the task names" if account(now) else
            "someone the task names" if _their_person(plan.query, now) else None)
        out.append(d if why is None else GateDecision(d.id, d.score, True, why, d.features))
    return out


def _names_more_than_its_verb(plan: RecallPlan, text: str) -> bool:
    """Whether `text` is a standing instruction sharing a content word with the task besides its verb."""
    verb = instruction_verb(text)
    return verb is not None and bool((set(plan.content) & set(content_stems(text))) - {stem(verb)})


def _their_person(message: str, text: str) -> str | None:
    """The tie to the user ("son", "manager", "dog") that both a task ("…for my son") and a memory
    about that person or pet ("User's son Kiran is 9.", "My manager is Katrin.") name, or None."""
    asked = {m.group(1).lower() for m in _MY_ROLE.finditer(message or "")}
    return next((m.group(1).lower() for m in _THEIR_ROLE.finditer(text or "") if m.group(1).lower() in asked), None)


def _kept_by(decisions: list[GateDecision], found: tuple[str, float, int] | None, counted: str) -> list[GateDecision]:
    """`decisions` with the one Surprise found (id, chance, n) kept, saying why."""
    if found is None:
        return decisions
    return [d if d.kept or d.id != found[0] else
            GateDecision(d.id, d.score, True, f"stands out from chance (p={found[1]:.3f}; {counted}: {found[2]})",
                         d.features)
            for d in decisions]


def _one_gate(params: FeatureGateParams, plan: RecallPlan, top: list[Ranked], stats: TermStats,
              context: list[Ranked] | None) -> list[GateDecision]:
    feats = features(plan, top, stats, context)
    logits = [logit(params, f) for f in feats]
    scores = [sigmoid(z) for z in logits]
    qfeats = query_features(plan, top, stats, logits, context)
    q = query_score(params, qfeats, scores)
    for f in feats:
        f["query_score"] = q
    return decide(scores, [r.id for r in top], params.item_threshold, params.query_threshold, feats,
                  query=q, relative=params.relative)


def cross_encoder_gate(gate, threshold: float, query: str, top: list[Ranked]) -> list[GateDecision]:
    """Score the top candidates jointly with the query; below the threshold is dropped."""
    passages = [r.candidate.text.strip() for r in top]
    scores = [float(s) for s in gate.score(query, passages)]
    return [GateDecision(r.id, s, s >= threshold,
                         "kept" if s >= threshold else f"below threshold ({s:.3f} < {threshold:.3f})")
            for r, s in zip(top, scores)]


@lru_cache(maxsize=4)
def lexical_calibration(path: Path = LEXICAL_CALIBRATION) -> dict | None:
    """The shipped calibration of the lexical gate, or None when it is missing or unreadable."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None
