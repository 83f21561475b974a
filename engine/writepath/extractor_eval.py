"""Precision and recall of the rule-based extractor against LoCoMo `observation` facts.

Each turn of each session is run through the extractor with its speaker as the subject; its
statements are compared with the observation facts whose dia_id names that turn. The match is a
token overlap: the Dice coefficient of the two facts' content tokens (lowercased, stopwords and
the two speakers' names removed, a light suffix stemmer) must reach `threshold` (0.4 by default).
Precision = statements matching a gold fact of their turn / all statements; recall = gold facts
matched by a statement of one of their turns / all gold facts. netclaw's retired rules are
measured the same way as a baseline.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from . import extractor
from .extractor import sentences

DEFAULT_THRESHOLD = 0.4
_STOP = frozenset(
    "a an the and or but if of to in on at for with from by as is are was were be been being am has have "
    "had do does did it its this that these those there here he she they them his her their hers him i me "
    "my we our you your so very really just also about into over after before than then too not no yes "
    "can could would should will shall may might must some any all more most much many such what which "
    "who whom whose when where why how up out off again further once only own same other both each few "
    "s t don now get got getting like".split()
)
_DIA = re.compile(r"D\d+:\d+")


@dataclass(frozen=True)
class EvalResult:
    precision: float
    recall: float
    f1: float
    statements: int
    matched_statements: int
    gold: int
    matched_gold: int
    threshold: float
    conversations: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_tokens(text: str, names: frozenset[str] = frozenset()) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'s", ""))
    return {_stem(w) for w in words if w not in _STOP and w not in names and len(w) > 1}


def dice(a: set[str], b: set[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


def dia_ids(raw) -> list[str]:
    """Observation dia_ids come as a string, a comma-joined string or a list (LoCoMo flaws)."""
    if isinstance(raw, list):
        return [d for r in raw for d in dia_ids(r)]
    return _DIA.findall(str(raw or ""))


def load(path: str | Path) -> list[dict]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return data if isinstance(data, list) else [data]


def turns_and_gold(sample: dict):
    """(turns: [(dia_id, speaker, text)], gold: [(fact, [dia_ids])], speaker names)."""
    conv = sample["conversation"]
    turns = []
    for key, value in conv.items():
        if re.fullmatch(r"session_\d+", key) and isinstance(value, list):
            turns += [(t["dia_id"], t["speaker"], t.get("text") or "") for t in value]
    gold = []
    for session in (sample.get("observation") or {}).values():
        for facts in (session or {}).values():
            for fact, raw in facts:
                gold.append((fact, dia_ids(raw)))
    names = frozenset(n.lower() for n in (conv.get("speaker_a"), conv.get("speaker_b")) if n)
    return turns, gold, names


def predict(text: str, speaker: str, method: str) -> list[str]:
    if method == "netclaw":
        return netclaw_baseline(text)
    return [s.fact for s in extractor.statements(text, subject=speaker)]


def evaluate(samples: list[dict], threshold: float = DEFAULT_THRESHOLD, method: str = "rules") -> EvalResult:
    statements = matched_statements = gold_total = matched_gold = 0
    for sample in samples:
        turns, gold, names = turns_and_gold(sample)
        gold_by_turn: dict[str, list[int]] = {}
        gold_tokens = [content_tokens(fact, names) for fact, _ in gold]
        for i, (_, ids) in enumerate(gold):
            for d in ids:
                gold_by_turn.setdefault(d, []).append(i)
        hit_gold: set[int] = set()
        for dia, speaker, text in turns:
            for fact in predict(text, speaker, method):
                statements += 1
                tokens = content_tokens(fact, names)
                hits = [g for g in gold_by_turn.get(dia, ()) if dice(tokens, gold_tokens[g]) >= threshold]
                if hits:
                    matched_statements += 1
                    hit_gold.update(hits)
        gold_total += len(gold)
        matched_gold += len(hit_gold)
    precision = matched_statements / statements if statements else 0.0
    recall = matched_gold / gold_total if gold_total else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return EvalResult(round(precision, 4), round(recall, 4), round(f1, 4), statements, matched_statements,
                      gold_total, matched_gold, threshold, len(samples))


# -- netclaw's retired rules, kept as the baseline the eval compares against ------------------

_NETCLAW_PREFIX = re.compile(r"^(?:i|well|going to|want to|if that|i'm|you|let me|maybe|just|so|anyway)\b", re.I)
_NETCLAW_FACT = re.compile(
    r"\b((?:[A-Z][\w-]*\s+){0,4}[A-Z][\w-]*|(?:[Oo]ur|[Tt]he)\s+(?:\w+\s+){0,3}\w+)\s+"
    r"(has|have|uses|use|supports|support|requires|require|needs|need|completed)\s+(.+)")
_NETCLAW_MILESTONE = re.compile(r"\bwe\s+(?:successfully\s+)?completed\s+(.+)", re.I)


def netclaw_baseline(text: str) -> list[str]:
    """netclaw's retired turn-complete rules (netclaw-facts §4), reimplemented for comparison."""
    out = []
    for sentence in sentences(text):
        m = _NETCLAW_MILESTONE.search(sentence)
        if m:
            out.append(f"Project Milestone: {m.group(1).strip()}")
            continue
        if _NETCLAW_PREFIX.match(sentence):
            continue
        m = _NETCLAW_FACT.search(sentence)
        if m:
            label = "Project Constraint" if m.group(2).startswith(("requir", "need")) else "Project Fact"
            out.append(f"{label}: {m.group(0).strip()}")
    return out
