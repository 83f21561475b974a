"""The LoCoMo evaluation harness: one fresh store per conversation, every question asked, metrics.

Facts mode stores the `observation` facts (dia_ids as provenance, the session date as
authored_at); turns mode stores each turn prefixed with its speaker. Either way the memory's date
is written into its text ("On 8 May 2023, ...") so both channels see it. Each answerable question
is asked against its own conversation's store (positives) and against one other conversation's
store that shares no speaker first name (cross-conversation negatives); every negative query is
asked against every store. Metrics are computed by `metrics.summarize` from the records.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..clock import FakeClock
from ..settings import defaults
from .eval_data import Conversation, NegativeQuery, cross_partner, date_words
from .pipeline import RecallConfig

BATCH = 500
# What a pool candidate's row keeps: what ranking reads (the ranking comparison, the calibration's
# re-ranking) and the text the gate's features read. Rows are shared per store and memory id, so
# the pools of thousands of questions hold each memory once.
SLIM = ("kind", "memory_class", "update_semantics", "updated_at", "expires_at", "title", "body", "aliases", "facets")


@dataclass(frozen=True)
class EvalOptions:
    mode: str = "facts"                 # "facts" | "turns"
    anonymize: bool = False
    date_prefix: bool = True
    keep_top: int = 20                  # ranked candidates kept per job (for baselines and calibration)
    title: str = "text"                 # "text": the fact or turn itself (no date); "auto": first line


@dataclass
class JobRecord:
    """One question asked against one store, and what recall did with it."""

    kind: str                            # "positive" | "cross_conversation" | "negative"
    source: str                          # "positive", "cross_conversation" or the negative file's source
    qid: str
    store: str
    relevant: frozenset[str]             # memory ids in this store whose provenance meets the evidence
    ranked: list                         # top Ranked candidates (pre floor and gate), best first
    pool: list = field(default_factory=list)   # every candidate (rows slimmed), for the ranking comparison
    injected: list[str] = field(default_factory=list)
    total_ms: float = 0.0
    degraded: list[str] = field(default_factory=list)
    plan: object = None
    stats: object = None
    mode: str = ""
    model_id: str | None = None
    floor: float | None = None
    coverage_weight: float | None = None
    topic: str = ""                      # PrefEval: the question's topic (leave-one-topic-out)
    injected_kinds: list[str] = field(default_factory=list)   # PrefEval: what each injected memory was


@dataclass
class Store:
    name: str
    engine: object
    scope: object
    provenance: dict[str, frozenset[str]]   # memory id -> dia ids


def memory_text(text: str, authored_at: int, date_prefix: bool) -> str:
    if date_prefix and authored_at:
        return f"On {date_words(authored_at)}, {text}"
    return text


def _title(m, options: EvalOptions) -> str:
    if options.title == "text":
        return m.text if len(m.text) <= 72 else m.text[:72].rsplit(" ", 1)[0] + "…"
    return ""


def build_store(engine, name: str, conv: Conversation, options: EvalOptions, *, wait_s: float = 600.0) -> Store:
    """Write the conversation's facts (or turns) into a fresh engine and wait for their vectors."""
    session = engine.open_session("personal", "locomo", title=name)
    scope = engine.scope(session)
    memories = conv.facts if options.mode == "facts" else conv.turns
    from .. import store as store_mod

    now = engine.now()
    ids: list[str] = []
    provenance: dict[str, frozenset[str]] = {}

    def insert(conn, drafts):
        return [store_mod.insert_memory(conn, d, now) for d in drafts]

    for start in range(0, len(memories), BATCH):
        chunk = memories[start:start + BATCH]
        drafts = [engine.draft(scope, _title(m, options), memory_text(m.text, m.authored_at, options.date_prefix),
                               provenance={"external": [{"dataset": "locomo", "conversation": conv.sample_id,
                                                         "dia_ids": sorted(m.dia_ids)}]},
                               authored_at=m.authored_at or None, source="eval")
                  for m in chunk]
        new = engine.write(insert, drafts)
        engine.notify_written(new)
        ids += new
        provenance.update({i: m.dia_ids for i, m in zip(new, chunk)})
    wait_for_vectors(engine, ids, wait_s)
    return Store(name, engine, scope, provenance)


def wait_for_vectors(engine, ids: list[str], wait_s: float) -> None:
    """Vectors are written by the models' listener (possibly in the background): wait for them."""
    models = engine.models
    if models is None or models.embedder() is None:
        return
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        vectors = models.vectors()
        if vectors is not None and all(vectors.has(i) for i in ids):
            return
        time.sleep(0.05)


def relevant_ids(store: Store, evidence: frozenset[str]) -> frozenset[str]:
    return frozenset(i for i, dias in store.provenance.items() if dias & evidence)


def run_jobs(stores: list[Store], convs: list[Conversation], negatives: list[NegativeQuery], *,
             config: RecallConfig | None = None, calibrating: bool = False, keep_top: int = 20,
             progress: Callable[[str], None] | None = None) -> list[JobRecord]:
    """Ask every question where it belongs; returns one record per (question, store)."""
    records: list[JobRecord] = []
    rows: dict[tuple[str, str], dict] = {}
    plan = []
    for i, conv in enumerate(convs):
        partner = cross_partner(convs, i)
        for q in conv.questions:
            plan.append(("positive", "positive", q.qid, q.text, i, q.evidence))
            if partner is not None:
                plan.append(("cross_conversation", "cross_conversation", q.qid, q.text, partner, None))
    for neg in negatives:
        for i in range(len(stores)):
            plan.append(("negative", neg.source, neg.qid, neg.text, i, None))
    for n, (kind, source, qid, text, si, evidence) in enumerate(plan):
        store = stores[si]
        recaller = store.engine.recaller
        trace = recaller.trace(store.scope, text, config=config, calibrating=calibrating)
        relevant = relevant_ids(store, evidence) if evidence else frozenset()
        records.append(record_of(trace, recaller.stats, kind=kind, source=source, qid=qid, store=store.name,
                                 relevant=relevant, rows=rows, keep_top=keep_top))
        if progress and n % 250 == 0:
            progress(f"{n}/{len(plan)} questions")
    return records


def record_of(trace, stats, *, kind: str, source: str, qid: str, store: str, relevant: frozenset[str],
              rows: dict | None = None, topic: str = "", keep_top: int = 20) -> JobRecord:
    """What one recall (`trace`, with the recaller's term statistics) did with one question, as the
    metrics and the calibration read it: the top `keep_top` ranked and every candidate, their rows
    slimmed and shared through `rows` (None: kept whole)."""
    pool = trace.pool.candidates if trace.pool else []
    return JobRecord(
        kind=kind, source=source, qid=qid, store=store, relevant=relevant, ranked=trace.ranked[:keep_top],
        pool=list(pool) if rows is None else [replace(c, row=slim_row(rows, store, c)) for c in pool],
        injected=[i.id for i in trace.injected], total_ms=trace.timings.get("total_ms", 0.0),
        degraded=list(trace.degraded), plan=trace.plan, stats=stats, mode=trace.mode, model_id=trace.model_id,
        floor=trace.floor, coverage_weight=trace.coverage_weight, topic=topic)


def slim_row(rows: dict, store: str, c) -> dict:
    key = (store, c.id)
    if key not in rows:
        rows[key] = {k: c.row.get(k) for k in SLIM}
    return rows[key]


def open_stores_engine(home: Path, open_engine: Callable, models_dir: Path | None = None):
    """A fresh engine in `home` reading models from `models_dir`, its embedder loaded and warm."""
    home.mkdir(parents=True, exist_ok=True)
    settings = defaults().with_overrides(memory__embeddings__auto_download=False)
    if models_dir is not None:
        settings = settings.with_overrides(memory__models_dir=str(models_dir))
    # A clock of its own that stands still: ranking weighs a memory's age, so on the wall clock a
    # slower machine (or one more busy) aged the memories differently and moved a result.
    engine = open_engine(home, settings=settings, start_workers=False, clock=FakeClock())
    models = getattr(engine, "models", None)
    if models is not None and hasattr(models, "load"):
        models.load(download=False, repair=False)
        if models.embedder() is not None:  # the first inference is slow: keep it out of the budget
            models.embedder().embed_queries(["warm up"])
    return engine


def open_stores(convs: list[Conversation], options: EvalOptions, home: Path, *,
                open_engine: Callable, models_dir: Path | None = None,
                progress: Callable[[str], None] | None = None) -> list[Store]:
    """One fresh engine per conversation under `home` (each sees the same models folder)."""
    stores = []
    for conv in convs:
        engine = open_stores_engine(home / conv.sample_id, open_engine, models_dir)
        stores.append(build_store(engine, conv.sample_id, conv, options))
        if progress:
            progress(f"stored {conv.sample_id}: {len(stores[-1].provenance)} memories")
    return stores


def close_stores(stores: list[Store]) -> None:
    for s in stores:
        s.engine.close()


def evaluate(convs: list[Conversation], negatives: list[NegativeQuery], options: EvalOptions, *,
             open_engine: Callable, models_dir: Path | None = None, config: RecallConfig | None = None,
             calibrating: bool = False, progress=None) -> list[JobRecord]:
    """Build the stores in a temporary home, run every job, close everything; returns the records."""
    with tempfile.TemporaryDirectory(prefix="keepmind-eval-") as tmp:
        stores = open_stores(convs, options, Path(tmp), open_engine=open_engine, models_dir=models_dir,
                             progress=progress)
        try:
            return run_jobs(stores, convs, negatives, config=config, calibrating=calibrating,
                            keep_top=options.keep_top, progress=progress)
        finally:
            close_stores(stores)
