"""Scenarios: a user's store as agents fill it, and the messages agents send before a turn.

PrefEval's stores are built one way: every memory a task needs is a stated preference, there are
four of them per topic, and none of the background facts is ever needed. A ranking weight or a
gate fitted there learns that build. A real store is not built that way: "Configure my LSP" needs
"I use Neovim", "Draft a message to my manager" needs who the manager is, "How do I calm my dog
during storms?" needs the dog. The scenario files hold what LoCoMo and PrefEval lack together:

- users, each with 25 to 35 memories as an agent stores them (first or third person): preferences
  and dislikes, constraints and health conditions, tools and setups, the people and pets in their
  life, home and work, habits, and dated one-off events;
- and 25 to 35 messages each: tasks, coding-agent prompts in the imperative, questions about the
  user's past, general knowledge, small talk, prompts with two parts. Each lists the memories a
  careful assistant would want in front of it for that turn (none for about 40 in 100 of them).

They were written for Keepmind, not drawn from a benchmark, so they can ship in the repository
(`eval/scenarios/`): `dev.json` (16 users, read while the method was built) and `test.json` (10 users
written apart from it and only ever measured). Small data: one message moves a figure by 0.3 to
0.8 points (0.3 of dev's 331 messages that need a memory, 0.8 of test's 130 that need none), so
they tell a method that serves real stores from one that does not, not two methods 0.01 apart.

Each message is asked as its own recall (recall's trace, as the other harnesses do) against the
user's store; the records have the LoCoMo harness's shape, so the same metrics read them.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import InvalidInput
from .evaluation import JobRecord, open_stores_engine, record_of, wait_for_vectors
from .metrics import degraded_counts, gate_metrics, in_top3, latency, share
from .pipeline import RecallConfig

NOTHING_SOURCE = "nothing_bears"   # a message no memory of the store bears on


@dataclass(frozen=True)
class Message:
    text: str
    expect: tuple[str, ...]        # the user's memory ids a careful assistant would want (may be empty)
    note: str = ""


@dataclass(frozen=True)
class User:
    name: str
    memories: dict[str, str]       # id -> text, in the order they are stored
    messages: tuple[Message, ...]


def load_scenarios(path: str | Path) -> list[User]:
    """The users of a scenario file ({"users": [{name, memories: [{id, text}], messages: [{text,
    expect, note}]}]}); a malformed file is refused with what is wrong and where."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidInput(f"{path.name}: not a readable scenario file ({e})") from e
    users = data.get("users") if isinstance(data, dict) else None
    if not isinstance(users, list) or not users:
        raise InvalidInput(f'{path.name}: expected {{"users": [...]}} with at least one user')
    out = []
    for n, u in enumerate(users, 1):
        where = f"{path.name}: user {n}"
        try:
            memories = {str(m["id"]): str(m["text"]) for m in u["memories"]}
            messages = tuple(Message(str(m["text"]), tuple(str(i) for i in m.get("expect", ())), str(m.get("note", "")))
                             for m in u["messages"])
            name = str(u.get("name") or f"user {n}")
        except (KeyError, TypeError) as e:
            raise InvalidInput(f"{where}: every memory needs an id and a text, every message a text ({e})") from e
        unknown = sorted({i for m in messages for i in m.expect} - set(memories))
        if unknown:
            raise InvalidInput(f"{where} ({name}): messages expect memories it does not have: {', '.join(unknown)}")
        if not memories or not messages:
            raise InvalidInput(f"{where} ({name}): needs memories and messages")
        if any(u.name == name for u in out):
            raise InvalidInput(f"{where}: a second user named {name!r} (names tell the users apart in the report)")
        out.append(User(name, memories, messages))
    return out


def run_user(engine, user: User, *, config: RecallConfig | None = None,
             calibrating: bool = False) -> list[JobRecord]:
    """Store one user's memories through the agent's path, then ask every message."""
    writer = engine.open_session("personal", "scenarios", title=user.name)
    stored = {key: engine.store(writer, "", text).id for key, text in user.memories.items()}
    wait_for_vectors(engine, list(stored.values()), 600.0)
    reader = engine.scope(engine.open_session("personal", "scenarios", title="messages"))
    recaller = engine.recaller
    rows: dict = {}
    records = []
    for n, message in enumerate(user.messages):
        trace = recaller.trace(reader, message.text, config=config, calibrating=calibrating)
        records.append(record_of(trace, recaller.stats, kind="positive" if message.expect else "negative",
                                 source="positive" if message.expect else NOTHING_SOURCE, qid=_qid(user, n),
                                 store=user.name, relevant=frozenset(stored[k] for k in message.expect),
                                 rows=rows, topic=user.name))
    return records


def _qid(user: User, n: int) -> str:
    """The record id of a user's message n (from 0)."""
    return f"{user.name}#{n + 1}"


def evaluate(users: list[User], *, open_engine: Callable, models_dir: Path | None = None,
             config: RecallConfig | None = None, progress=None) -> list[JobRecord]:
    """Every user in a fresh store under a temporary home; one record per message."""
    records: list[JobRecord] = []
    with tempfile.TemporaryDirectory(prefix="keepmind-scenarios-") as tmp:
        for n, user in enumerate(users):
            engine = open_stores_engine(Path(tmp) / f"user-{n}", open_engine, models_dir)
            try:
                records += run_user(engine, user, config=config)
            finally:
                engine.close()
            if progress:
                progress(f"{user.name}: {len(user.memories)} memories, {len(user.messages)} messages")
    return records


def summarize(records: list[JobRecord], users: list[User], *, config: dict) -> dict:
    """Needed memory injected (any of a message's), in the top 3 before floor and gate, precision,
    zero-injection on the messages no memory bears on, mean injected, latency; per user too; and
    every message whose outcome is wrong, with what it needed and what it got."""
    positives = [r for r in records if r.kind == "positive"]
    g = gate_metrics(records)
    texts = {}
    for r in records:   # the stored text of every candidate, to name it in the misses
        for c in r.pool:
            texts[(r.store, c.id)] = c.row.get("body") or c.row.get("title") or ""
    messages = {_qid(u, n): (u, m) for u in users for n, m in enumerate(u.messages)}

    def wrong(r) -> bool:
        return not (set(r.injected) & r.relevant) if r.relevant else bool(r.injected)

    return {
        "needed_injected": g["hit_rate"],
        "needed_in_top3": share(positives, in_top3),
        "precision": g["precision"],
        "zero_injection": g["zero_injection"].get(NOTHING_SOURCE, 0.0),
        "mean_injected_positive": g["mean_injected_positive"],
        "mean_injected_negative": g["mean_injected_negative"],
        "n_positive": len(positives),
        "n_negative": len(records) - len(positives),
        "latency_ms": latency(records),
        "by_user": {u.name: {"needed_injected": share([r for r in positives if r.store == u.name],
                                                       lambda r: bool(set(r.injected) & r.relevant)),
                             "zero_injection": share([r for r in records if r.store == u.name and not r.relevant],
                                                      lambda r: not r.injected)}
                    for u in users},
        "wrong": [{"message": messages[r.qid][1].text, "user": r.store,
                   "needed": [messages[r.qid][0].memories[k] for k in messages[r.qid][1].expect],
                   "injected": [texts.get((r.store, i), i) for i in r.injected],
                   "top3": [texts.get((r.store, c.id), c.id) for c in r.ranked[:3]]}
                  for r in records if wrong(r)],
        "degraded": degraded_counts(records),
        "config": config,
    }
