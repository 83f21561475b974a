"""Ranking: pure functions from candidates to an ordered list with the reasons.

Rankings are kept side by side because a composite score has to earn its place against the raw
channels (a peer shipped one that lost to raw cosine by 3x): `fused` is DESIGN.md's
`0.7 * cosine + 0.3 * squash(lexical) + class prior`, times the recency factor; `cosine` and
`bm25` are the raw channel scores; `hybrid` (shipped) is `fused` plus `w * coverage`, the
IDF-weighted share of the query's content stems that the memory contains, which on the dev data
lifted MRR by about 2 points over `fused` (BM25's length normalization and title weight reward
short partial matches; coverage rewards covering the whole question). The weight `w` is picked by
the calibration command and read from the embedder's calibration (`ranking.coverage_weight`); the
functions here take it as an argument. The eval compares them all in one run
(`keepmind eval locomo --compare-rankings`).

A task message ("Book me a flight to Berlin", "What coffee should I get?") needs what stays true
of the user, which rarely shares its words: on PrefEval the preference a task needs ranked behind
background facts (episodes, dated to a day) with the same cosine. So `hybrid` and `fused` add
`standing_weight` to a lasting memory, one not dated to a day (stance.lasting), when the part of
the message it matched asks for something (stance.asks_for_help), and weigh such a memory's
coverage of the message with a coverage weight of its own, `task_coverage_weight` (the words of
a task are mostly not the memory's words). The prior once went to standing statements alone
(preferences, constraints, conditions, habits: stance.standing). PrefEval cannot tell the two
apart, since every memory its tasks need is a preference and its background is all dated, but a
real store can: there a weight of 0.4 (0.57 of cosine) put every preference of the store, at any
cosine, above "I use Neovim" for "Configure my LSP" and above the manager for "Draft a message to
my manager" (`keepmind eval scenarios`: the needed memory in the top 3 for 0.59 of the dev
messages that need one, 0.84 with the prior on lasting memories).
Both are picked by the calibration too (`ranking.standing_weight`, `ranking.task_coverage_weight`);
without them (the defaults) ranking is as before.

A message of several sentences is matched part by part (plan.RecallPlan.parts): each candidate
has a cosine per part, and `best_segment` keeps the part where it scores best, with that part's
coverage, so a two-topic prompt finds each topic's memories.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..clock import DAY_MS

RANKINGS = ("hybrid", "fused", "cosine", "bm25")

# The coverage weight of a calibration that does not carry one (and of lexical-only recall): the
# value picked by hand from a sweep on dev data before the calibration command picked it.
DEFAULT_COVERAGE_WEIGHT = 0.3

# Class and storage priors in netclaw's raw points (netclaw-facts §3), damped /1000 in hybrid mode.
CLASS_POINTS = {"durable_fact": 480, "evidence": 40, "trace": -400}
SEMANTICS_POINTS = {"merge-document": 80, "append-document": 60, "immutable-record": 30}


@dataclass(frozen=True)
class Candidate:
    """A visible memory found by either channel, with its raw channel scores."""

    id: str
    row: dict = field(compare=False, repr=False)
    cosine: float | None          # None: no vector under the active model (a coverage gap)
    lexical: float                # FTS5 bm25 (>= 0); 0 when the lexical channel did not find it
    vector_rank: int | None = None
    lexical_rank: int | None = None
    coverage: float = 0.0         # IDF-weighted share of the query's content stems it contains
    cosines: tuple = ()           # cosine to each part of the message (0: the whole), when it has parts
    segment: int = 0              # the part of the message it is judged against (0: the whole)
    standing: bool = False        # states a lasting preference, constraint, condition or habit of the user
    lasting: bool = False         # not an episode dated to a day (every standing statement is lasting)
    for_task: bool = False        # the part of the message it matched asks for something to be done

    @property
    def text(self) -> str:
        return f"{self.row.get('title', '')}\n{self.row.get('body', '')}"


@dataclass(frozen=True)
class RankWeights:
    vector: float = 0.7
    lexical: float = 0.3
    squash_half: float = 8.0      # bm25 at which the squashed lexical score reaches 0.5
    coverage: float = DEFAULT_COVERAGE_WEIGHT   # weight of query coverage in the `hybrid` ranking
    half_life_days: float = 30.0
    standing: float = 0.0         # added to a standing statement matched by a task message
    task_coverage: float | None = None   # the coverage weight for a task message (None: `coverage`)

    def coverage_for(self, task: bool) -> float:
        """The coverage weight for a candidate matched by a task message or by a question."""
        return self.task_coverage if (task and self.task_coverage is not None) else self.coverage


@dataclass(frozen=True)
class Ranked:
    candidate: Candidate
    score: float
    reasons: tuple[str, ...]

    @property
    def id(self) -> str:
        return self.candidate.id


def calibrated_coverage_weight(calibration: dict | None) -> float | None:
    """The `hybrid` coverage weight a model's calibration carries, or None if it carries none."""
    return calibrated_weight(calibration, "coverage_weight")


def calibrated_weight(calibration: dict | None, key: str) -> float | None:
    """A ranking weight (`ranking.<key>`) a model's calibration carries, or None if it carries none."""
    ranking = (calibration or {}).get("ranking")
    value = ranking.get(key) if isinstance(ranking, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 10.0:
        return None
    return float(value)


def squash(score: float, half: float) -> float:
    """Map a lexical score in [0, inf) to [0, 1): half of it at `half`."""
    score = max(0.0, score)
    return score / (score + half) if half > 0 else (1.0 if score > 0 else 0.0)


def class_prior(row: dict) -> float:
    """The memory class and storage pattern prior, damped for the hybrid score."""
    points = CLASS_POINTS.get(row.get("memory_class", ""), 0)
    points += SEMANTICS_POINTS.get(row.get("update_semantics", "") or _semantics(row), 0)
    if row.get("expires_at") is not None:
        points += 5
    return points / 1000.0


def _semantics(row: dict) -> str:
    return "merge-document" if row.get("kind") == "document" else "immutable-record"


def recency(row: dict, now: int, half_life_days: float) -> float:
    """0.85 + 0.15 * 2^(-age/half-life), age from the last update."""
    if half_life_days <= 0:
        return 1.0
    age_days = max(0.0, (now - (row.get("updated_at") or now)) / DAY_MS)
    return 0.85 + 0.15 * 2.0 ** (-age_days / half_life_days)


def standing_prior(c: Candidate, w: RankWeights) -> float:
    """The standing weight for a lasting memory matched by a task message, else 0."""
    return w.standing if (c.lasting and c.for_task) else 0.0


def fused_score(c: Candidate, now: int, w: RankWeights, *, coverage: bool = False) -> tuple[float, tuple[str, ...]]:
    cos = c.cosine if c.cosine is not None else 0.0
    lex = squash(c.lexical, w.squash_half)
    prior = class_prior(c.row)
    rec = recency(c.row, now, w.half_life_days)
    extra = w.coverage_for(c.for_task) * c.coverage if coverage else 0.0
    stand = standing_prior(c, w)
    score = (w.vector * cos + w.lexical * lex + extra + prior + stand) * rec
    reasons = (f"cosine={cos:.3f}" + (" (no vector)" if c.cosine is None else ""),
               f"lexical={c.lexical:.2f} squashed={lex:.3f}", f"prior={prior:.3f}", f"recency={rec:.3f}")
    if coverage:
        reasons += (f"coverage={c.coverage:.3f}",)
    if stand:
        reasons += (f"lasting={stand:.3f}",)
    if c.segment:
        reasons += (f"segment={c.segment}",)
    return score, reasons


def best_segment(c: Candidate, coverages: list[float], tasks: list[bool], w: RankWeights) -> Candidate:
    """The candidate judged against the part of the message where it scores best.

    `coverages[s]` and `tasks[s]` are its coverage of part s and whether part s asks for
    something (0: the whole message); its cosine to part s is `c.cosines[s]` (the whole message's
    when it has no vector for the part). Ties keep the earlier part.
    """
    best, best_score = 0, None
    for s, (cov, task) in enumerate(zip(coverages, tasks)):
        cos = c.cosines[s] if s < len(c.cosines) and c.cosines[s] is not None else (c.cosine or 0.0)
        score = w.vector * cos + w.coverage_for(task) * cov + (w.standing if (task and c.lasting) else 0.0)
        if best_score is None or score > best_score + 1e-12:
            best, best_score = s, score
    cos = c.cosines[best] if best < len(c.cosines) and c.cosines[best] is not None else c.cosine
    return replace(c, cosine=cos, coverage=coverages[best] if coverages else c.coverage, segment=best,
                   for_task=bool(tasks[best]) if tasks else c.for_task)


def rank(candidates: list[Candidate], now: int, *, method: str = "hybrid",
         weights: RankWeights = RankWeights()) -> list[Ranked]:
    """Order candidates best first by `method`.

    Ties break by the channels' own order (the lexical channel's: bm25, then recency, then the
    order memories were written), then by id: ids are random, so breaking ties by id alone made
    two stores built from the same data rank differently (and calibration unreproducible).
    """
    if method not in RANKINGS:
        raise ValueError(f"unknown ranking {method!r}: use one of {', '.join(RANKINGS)}")
    out: list[Ranked] = []
    for c in candidates:
        if method in ("fused", "hybrid"):
            score, reasons = fused_score(c, now, weights, coverage=method == "hybrid")
        elif method == "cosine":
            score = c.cosine if c.cosine is not None else -1.0
            reasons = (f"cosine={score:.3f}",)
        else:
            score = c.lexical
            reasons = (f"bm25={score:.2f}",)
        out.append(Ranked(c, score, reasons))
    last = len(candidates) + 1
    out.sort(key=lambda r: (-r.score, r.candidate.lexical_rank or last, r.candidate.vector_rank or last, r.id))
    return out
