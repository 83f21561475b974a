"""What one recall carries from stage to stage: its configuration, the run's fixed inputs, the
vector channel and the trace every stage writes into (the receipt's content).

A leaf of the pipeline: pipeline.py runs the stages in order and decide.py holds the deciding
ones; both read these types, so they live here and neither imports the other's internals.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from .candidates import Pool
from .gate import FeatureGateParams, GateDecision
from .inject import Injected, render_block
from .plan import RecallPlan
from .profiles import Companion
from .rank import Ranked, RankWeights

DEFAULT_RANKING = "hybrid"
VECTOR_SEARCH_MS = 100.0  # what the vector search and hydration may add to the embed budget


@dataclass(frozen=True)
class RecallConfig:
    """Everything a recall run needs besides the store; built from settings, overridable in tests."""

    timeout_ms: float = 300.0
    embed_budget_ms: float = 150.0
    gate_budget_ms: float = 120.0
    max_items: int = 3
    max_chars: int = 2000
    weights: RankWeights = RankWeights()
    ranking: str = DEFAULT_RANKING
    embeddings_enabled: bool = True
    gate_enabled: bool | None = None          # None: on (False: the floor's output is injected)
    gate_threshold: float | None = None       # cross-encoder threshold override
    floor: float | None = None                # None: the embedder's calibrated floor
    feature_gate: FeatureGateParams | None = None        # None: from the embedder's calibration
    lexical_gate: FeatureGateParams | None = None        # None: the shipped lexical calibration
    use_cross_encoder: bool = True
    # Each sentence of a message of several recalled for on its own as well (plan.segments). Off:
    # measured on the dev data, the parts' own candidates cost more than they found (CISI
    # zero-injection 0.998 -> 0.984, PrefEval zero-injection on absent topics 0.833 -> 0.792, the
    # same preference injection) and their embeddings doubled recall's p95 on long prompts.
    message_parts: bool = False

    @classmethod
    def from_settings(cls, settings) -> "RecallConfig":
        return cls(
            timeout_ms=settings["memory.recall.timeout_ms"],
            embed_budget_ms=settings["memory.recall.embed_budget_ms"],
            gate_budget_ms=settings["memory.recall.gate_budget_ms"],
            max_items=settings["memory.recall.max_items"],
            max_chars=settings["memory.recall.max_injected_chars"],
            weights=RankWeights(vector=settings["memory.recall.vector_weight"],
                                lexical=settings["memory.recall.lexical_weight"],
                                half_life_days=settings["memory.recall.recency_half_life_days"]),
            ranking=settings.get("memory.recall.ranking", DEFAULT_RANKING) or DEFAULT_RANKING,
            embeddings_enabled=settings["memory.embeddings.enabled"],
            gate_enabled=settings["memory.recall.gate.enabled"],
            gate_threshold=settings["memory.recall.gate.threshold"],
            floor=settings["memory.recall.min_cosine"],
        )


@dataclass
class RecallTrace:
    """Everything one recall considered and decided: the receipt's content."""

    plan: RecallPlan
    mode: str = "lexical"                      # "hybrid" | "lexical" | "inert"
    ranking: str = DEFAULT_RANKING
    coverage_weight: float | None = None       # the `hybrid` ranking's coverage weight used
    pool: Pool | None = None
    ranked: list[Ranked] = field(default_factory=list)
    floor: float | None = None
    floor_source: str | None = None
    floor_dropped: list[Ranked] = field(default_factory=list)
    gate_kind: str | None = None               # "cross_encoder" | "feature" | "lexical" | None (degraded)
    gate_input: list[Ranked] = field(default_factory=list)
    gate: list[GateDecision] = field(default_factory=list)
    companions: list[Companion] = field(default_factory=list)   # profile members joining a kept item
    injected: list[Injected] = field(default_factory=list)
    budget_dropped: list[tuple[Injected, str]] = field(default_factory=list)
    excluded: tuple[str, ...] = ()
    degraded: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    model_id: str | None = None

    @property
    def block(self) -> str | None:
        return render_block(self.injected)


@dataclass(frozen=True)
class Run:
    """What every stage of one recall reads: the store, the scope, the budget and the clock."""

    models: object
    snapshot: Callable
    scope: object
    now: int
    config: RecallConfig
    exclude: frozenset[str]
    executor: ThreadPoolExecutor | None
    emit: Callable
    timer: Callable[[], float]
    t0: float

    def ms(self) -> float:
        """Milliseconds since the recall began."""
        return (self.timer() - self.t0) * 1000


@dataclass
class Channel:
    """The vector channel of one recall: its embedder and index, the query vector, why it degraded."""

    embedder: object = None
    vectors: object = None
    query_vec: object = None
    reason: str | None = None
