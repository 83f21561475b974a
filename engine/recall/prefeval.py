"""The PrefEval harness: simulated users state preferences, then ask the task questions that need them.

PrefEval (Amazon Science) pairs an explicit preference ("I dislike the taste and smell of fish and
seafood.") with a task question that needs it ("What are some nutritious, omega-3 rich foods I
can include in my diet?"). Protocol, per simulated user, seeded: 5 random topics are present and
4 random preferences of each are stored through `store_memory` (so whatever curation adds
counts), over 250 facts of one LoCoMo conversation as background (anonymized, dated as in the
LoCoMo harness); each stored preference's question is a positive (that preference should be
injected) and 2 questions of each of up to 5 absent topics are negatives (nothing should be).
With `end_to_end` each preference is said as a user turn instead, the observer distils the
session without an LLM, and a preference counts as whatever memory was learnt from its turn.

The records have the LoCoMo harness's shape (evaluation.JobRecord, with the topic), so the same
metrics and the calibration read them.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import InvalidInput
from .eval_data import Conversation, Memory
from .evaluation import JobRecord, memory_text, open_stores_engine, record_of, wait_for_vectors
from .metrics import degraded_counts, gate_metrics, in_top3, latency, share
from .pipeline import RecallConfig

ABSENT_SOURCE = "absent_topic"
ASSISTANT_REPLY = "Noted."


@dataclass(frozen=True)
class Pair:
    """One PrefEval pair: a stated preference and the task question that needs it."""

    pid: str
    topic: str
    preference: str
    question: str


@dataclass(frozen=True)
class Protocol:
    users: int = 12
    seed: int = 0
    topics: int = 5                 # present topics per user
    per_topic: int = 4              # preferences stored per present topic
    absent_topics: int = 5          # absent topics asked per user
    per_absent: int = 2             # questions per absent topic
    background: int = 250           # LoCoMo facts per user
    end_to_end: bool = False


@dataclass(frozen=True)
class UserPlan:
    index: int
    stored: tuple[Pair, ...]
    negatives: tuple[Pair, ...]
    background: tuple[Memory, ...]
    conversation: str


def load_prefeval(path: str | Path) -> list[Pair]:
    """JSON Lines of {id, topic, preference, question}; blank lines skipped, bad lines are errors."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"no PrefEval file at {path}: pass --data with a JSON Lines file of "
                           "{id, topic, preference, question}")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out.append(Pair(str(obj.get("id") or f"{path.stem}-{n}"), str(obj["topic"]),
                            str(obj["preference"]).strip(), str(obj["question"]).strip()))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            raise InvalidInput(f"{path.name} line {n}: expected a JSON object with id, topic, preference "
                               "and question") from None
    if len({p.topic for p in out}) < 2:
        raise InvalidInput(f"{path.name} needs at least two topics (present and absent ones)")
    return out


def plan_users(pairs: list[Pair], background: list[Conversation], protocol: Protocol) -> list[UserPlan]:
    """Each simulated user's stored pairs, negative questions and background, from the seed alone."""
    by_topic: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        by_topic[p.topic].append(p)
    topics = sorted(by_topic)
    n_present = min(protocol.topics, len(topics) - 1)
    plans = []
    for u in range(protocol.users):
        rng = random.Random(f"prefeval:{protocol.seed}:{u}")
        present = rng.sample(topics, n_present)
        absent = [t for t in topics if t not in present]
        absent = rng.sample(absent, min(protocol.absent_topics, len(absent)))
        stored = [p for t in present for p in rng.sample(by_topic[t], min(protocol.per_topic, len(by_topic[t])))]
        negatives = [p for t in absent for p in rng.sample(by_topic[t], min(protocol.per_absent, len(by_topic[t])))]
        facts: tuple[Memory, ...] = ()
        name = ""
        if background:
            conv = rng.choice(background)
            name = conv.sample_id
            facts = tuple(rng.sample(list(conv.facts), min(protocol.background, len(conv.facts))))
        plans.append(UserPlan(u, tuple(stored), tuple(negatives), facts, name))
    return plans


def _write_background(engine, scope, facts: tuple[Memory, ...], conversation: str) -> list[str]:
    from .. import store as store_mod

    now = engine.now()
    drafts = [engine.draft(scope, m.text if len(m.text) <= 72 else m.text[:72].rsplit(" ", 1)[0] + "…",
                           memory_text(m.text, m.authored_at, True),
                           provenance={"external": [{"dataset": "locomo", "conversation": conversation,
                                                     "dia_ids": sorted(m.dia_ids)}]},
                           authored_at=m.authored_at or None, source="eval") for m in facts]
    ids = engine.write(lambda conn: [store_mod.insert_memory(conn, d, now) for d in drafts]) if drafts else []
    engine.notify_written(ids)
    return ids


def _store_preferences(engine, session: str, stored: tuple[Pair, ...]) -> dict[str, frozenset[str]]:
    """store_memory each preference, as an agent would, and curate: pair id -> memory ids."""
    queued = {engine.store_memory(session, "", p.preference).checkpoint_id: p.pid for p in stored}
    out: dict[str, set[str]] = defaultdict(set)
    for outcome in engine.writepath.curation.drain():
        pid = queued.get(outcome.checkpoint_id)
        if pid is not None:
            out[pid] |= set(outcome.memory_ids)
    return {pid: frozenset(ids) for pid, ids in out.items()}


def _say_preferences(engine, session: str, stored: tuple[Pair, ...]) -> dict[str, frozenset[str]]:
    """Say each preference as a user turn, let the observer distil without an LLM, curate: a
    preference was learnt as the memories its turn's proposals were written into (created, or
    appended to the living document of their anchor)."""
    turn_of = {}
    for p in stored:
        turn_of[engine.add_turn(session, user=p.preference, assistant=ASSISTANT_REPLY)] = p.pid
    engine.end_session(session)
    engine.writepath.observer.distill(session, engine.now(), "end")
    outcomes = engine.writepath.curation.drain()
    out: dict[str, set[str]] = defaultdict(set)
    with engine.db.snapshot() as conn:
        for o in outcomes:
            for (payload,) in conn.execute("SELECT payload_json FROM memory_checkpoints WHERE checkpoint_id=?",
                                           (o.checkpoint_id,)):
                for turn in json.loads(payload).get("proposal", {}).get("turns") or ():
                    if turn in turn_of:
                        out[turn_of[turn]] |= set(o.memory_ids)
    return {pid: frozenset(ids) for pid, ids in out.items()}


def learnt_texts(engine, ids: frozenset[str]) -> list[str]:
    with engine.db.snapshot() as conn:
        return [f"{t}\n{b}" for i in ids for t, b in conn.execute(
            "SELECT title, body FROM memory_documents WHERE document_id=? UNION ALL"
            " SELECT title, body FROM memory_records WHERE record_id=?", (i, i))]


def run_user(engine, plan: UserPlan, protocol: Protocol, *, config: RecallConfig | None = None,
             calibrating: bool = False) -> tuple[list[JobRecord], dict]:
    """Build one user's store in `engine`, ask every question; returns (records, what was learnt)."""
    store_name = f"user-{plan.index}"
    writer = engine.open_session("personal", "prefeval", title=store_name)
    scope = engine.scope(writer)
    background = _write_background(engine, scope, plan.background, plan.conversation)
    teach = _say_preferences if protocol.end_to_end else _store_preferences
    learnt = teach(engine, engine.open_session("personal", "prefeval", title="preferences"), plan.stored)
    wait_for_vectors(engine, background + [i for ids in learnt.values() for i in ids], 600.0)
    reader = engine.scope(engine.open_session("personal", "prefeval", title="questions"))
    recaller = engine.recaller
    rows: dict = {}
    records = []
    jobs = [("positive", "positive", p, learnt.get(p.pid, frozenset())) for p in plan.stored]
    jobs += [("negative", ABSENT_SOURCE, p, frozenset()) for p in plan.negatives]
    topic_of = {i: p.topic for p in plan.stored for i in learnt.get(p.pid, ())}
    facts = frozenset(background)
    for kind, source, pair, relevant in jobs:
        trace = recaller.trace(reader, pair.question, config=config, calibrating=calibrating)
        record = record_of(trace, recaller.stats, kind=kind, source=source, qid=pair.pid, store=store_name,
                           relevant=relevant, rows=rows, topic=pair.topic)
        record.injected_kinds = [injected_kind(i, relevant, pair.topic, topic_of, facts) for i in record.injected]
        records.append(record)
    return records, {p.pid: learnt_texts(engine, learnt.get(p.pid, frozenset())) for p in plan.stored}


# What an injected memory was, for the question it was injected for (summarize counts them).
INJECTED_KINDS = ("needed", "same_topic_preference", "other_topic_preference", "background", "other")


def injected_kind(memory_id: str, relevant: frozenset[str], topic: str, topic_of: dict[str, str],
                  background: frozenset[str]) -> str:
    """"needed" (the question's own preference), another stored preference of the question's topic
    or of another topic, a background fact, or "other" (a memory none of these: a curation merge)."""
    if memory_id in relevant:
        return "needed"
    if memory_id in topic_of:
        return "same_topic_preference" if topic_of[memory_id] == topic else "other_topic_preference"
    return "background" if memory_id in background else "other"


def evaluate(pairs: list[Pair], background: list[Conversation], protocol: Protocol, *, open_engine: Callable,
             models_dir: Path | None = None, config: RecallConfig | None = None, calibrating: bool = False,
             progress=None) -> tuple[list[JobRecord], dict[str, list[str]], list[UserPlan]]:
    """Every simulated user in a fresh store under a temporary home; returns the records, what was
    learnt from each stored preference, and the users' plans."""
    plans = plan_users(pairs, background, protocol)
    records: list[JobRecord] = []
    learnt: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="keepmind-prefeval-") as tmp:
        for plan in plans:
            engine = open_stores_engine(Path(tmp) / f"user-{plan.index}", open_engine, models_dir)
            try:
                found, taught = run_user(engine, plan, protocol, config=config, calibrating=calibrating)
            finally:
                engine.close()
            records += found
            learnt.update({f"user-{plan.index}:{pid}": texts for pid, texts in taught.items()})
            if progress:
                progress(f"user {plan.index}: {len(plan.stored)} preferences, {len(plan.negatives)} negatives")
    return records, learnt, plans


def unrelated_null(pairs: list[Pair], embedder) -> tuple[float, float]:
    """Mean and spread of the cosine of a task question to a preference that does not bear on it:
    every question (embedded as a query) against every preference of another topic (as a passage),
    for the task gate's rule for small stores (gate.Surprise)."""
    questions = embedder.embed_queries([p.question for p in pairs])
    preferences = embedder.embed_passages([p.preference for p in pairs])
    topics = np.array([p.topic for p in pairs])
    cosines = (questions @ preferences.T)[topics[:, None] != topics[None, :]]
    return float(cosines.mean()), float(cosines.std())


def measure_null(pairs: list[Pair], *, open_engine: Callable,
                 models_dir: Path | None = None) -> tuple[float, float] | None:
    """unrelated_null with the embedder a fresh engine loads from `models_dir` (None without one)."""
    with tempfile.TemporaryDirectory(prefix="keepmind-prefeval-") as tmp:
        engine = open_stores_engine(Path(tmp) / "null", open_engine, models_dir)
        try:
            embedder = engine.models.embedder()
            return unrelated_null(pairs, embedder) if embedder is not None else None
        finally:
            engine.close()


def summarize(records: list[JobRecord], *, config: dict, learnt: dict[str, list[str]] | None = None,
              keeps_words: Callable[[str, list[str]], bool] | None = None,
              pairs: dict[str, Pair] | None = None) -> dict:
    """The issue's figures: preference injected, in the top 3 before floor and gate, precision,
    zero-injection on absent topics, mean injected, latency; per topic too."""
    positives = [r for r in records if r.kind == "positive"]
    negatives = [r for r in records if r.kind != "positive"]
    g = gate_metrics(records)
    out = {
        "preference_injected": g["hit_rate"],
        "preference_in_top3": share(positives, in_top3),
        "precision": g["precision"],
        "zero_injection": g["zero_injection"].get(ABSENT_SOURCE, 0.0),
        "mean_injected_positive": g["mean_injected_positive"],
        "mean_injected_negative": g["mean_injected_negative"],
        "relevant_recall_retained": g["relevant_recall_retained"],
        "n_positive": len(positives),
        "n_negative": len(negatives),
        "latency_ms": latency(records),
        "by_topic": {t: {"preference_injected": share([r for r in positives if r.topic == t],
                                                      lambda r: any(i in r.relevant for i in r.injected)),
                         "preference_in_top3": share([r for r in positives if r.topic == t], in_top3),
                         "zero_injection": share([r for r in negatives if r.topic == t], lambda r: not r.injected)}
                     for t in sorted({r.topic for r in records})},
    }
    out["injected_kinds"] = {kind: {k: sum(r.injected_kinds.count(k) for r in group) for k in INJECTED_KINDS}
                             for kind, group in (("positive", positives), ("negative", negatives))}
    if learnt is not None:
        out["learnt"] = _learnt(learnt, keeps_words, pairs or {})
    out["degraded"] = degraded_counts(records)
    out["config"] = config
    return out


def _learnt(learnt: dict[str, list[str]], keeps_words, pairs: dict[str, Pair]) -> dict:
    """How many stated preferences became a memory, and kept the statement's content words."""
    total = len(learnt)
    became = sum(1 for texts in learnt.values() if texts)
    kept = sum(1 for key, texts in learnt.items()
               if texts and keeps_words is not None and keeps_words(pairs[key.split(":", 1)[1]].preference, texts))
    return {"preferences": total, "became_memory": _r(became, total),
            "kept_content_words": _r(kept, total) if keeps_words is not None else None}


def _r(x: float, n: int) -> float:
    return round(x / n, 4) if n else 0.0


def keeps_content_words(statement: str, texts: list[str]) -> bool:
    """Whether every content word of a stated preference (stemmed) survives in what was learnt."""
    from .plan import content_stems

    wanted = set(content_stems(statement))
    found = set(content_stems("\n".join(texts)))
    return bool(texts) and wanted <= found
