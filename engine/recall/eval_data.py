"""Reading LoCoMo (the public `locomo10.json` schema) and negative query files, flaws included.

Known flaws handled here: evidence ids that are malformed ("D8:6; D9:17", "D:11:26", "D30:05",
space-joined lists) or point to no turn; observation dia_ids that are lists or comma-joined
strings; category-3 questions with no evidence. Nothing here touches the store.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import InvalidInput

DIA_RE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
SESSION_RE = re.compile(r"^session_(\d+)$")
ANSWERABLE = (1, 2, 3, 4)


@dataclass(frozen=True)
class Memory:
    text: str                   # the content as stored (date prefix added by the harness)
    dia_ids: frozenset[str]     # provenance: the turns it came from
    authored_at: int            # the session's date, epoch ms
    speaker: str


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    evidence: frozenset[str]
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    facts: tuple[Memory, ...]
    turns: tuple[Memory, ...]
    questions: tuple[Question, ...]     # answerable only: categories 1-4, evidence resolving to turns
    skipped_questions: int


@dataclass(frozen=True)
class NegativeQuery:
    qid: str
    text: str
    source: str


def dia_ids(value) -> frozenset[str]:
    """Normalized dia ids from a string, a list, or a malformed mix ("D8:6; D9:17", "D30:05")."""
    if value is None:
        return frozenset()
    if isinstance(value, (list, tuple)):
        out: set[str] = set()
        for v in value:
            out |= dia_ids(v)
        return frozenset(out)
    return frozenset(f"D{int(a)}:{int(b)}" for a, b in DIA_RE.findall(str(value)))


def parse_date(text: str) -> int:
    """'1:56 pm on 8 May, 2023' -> epoch ms (UTC)."""
    cleaned = re.sub(r"\s+", " ", str(text)).strip()
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M%p on %d %B, %Y"):
        try:
            dt = datetime.strptime(cleaned, fmt).replace(tzinfo=timezone.utc)
            return int(dt.timestamp() * 1000)
        except ValueError:
            continue
    raise InvalidInput(f"unreadable LoCoMo session date {text!r}")


def date_words(ms: int) -> str:
    """'8 May 2023': the form questions use ("in May 2023", "on 8 May")."""
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return f"{dt.day} {dt.strftime('%B')} {dt.year}"


def anonymizer(speakers: tuple[str, str]):
    """Replace the two speakers' names with User and Friend (whole words, possessives too)."""
    names = [(re.compile(rf"\b{re.escape(name)}\b"), alias)
             for name, alias in zip(speakers, ("User", "Friend")) if name]

    def apply(text: str) -> str:
        for pattern, alias in names:
            text = pattern.sub(alias, text)
        return text
    return apply


def _sessions(conv: dict) -> list[tuple[int, list, int]]:
    out = []
    for key, turns in conv.items():
        m = SESSION_RE.match(key)
        if m and isinstance(turns, list):
            date = conv.get(f"{key}_date_time")
            out.append((int(m.group(1)), turns, parse_date(date) if date else 0))
    return sorted(out, key=lambda s: s[0])


def parse_conversation(obj: dict, *, anonymize: bool = False) -> Conversation:
    conv = obj["conversation"]
    speakers = (conv.get("speaker_a", ""), conv.get("speaker_b", ""))
    anon = anonymizer(speakers) if anonymize else (lambda t: t)
    sessions = _sessions(conv)
    session_date = {n: d for n, _, d in sessions}
    turns, turn_ids = [], set()
    for _n, items, date in sessions:
        for t in items:
            ids = dia_ids(t.get("dia_id"))
            turn_ids |= ids
            text = t.get("text", "") or ""
            if t.get("blip_caption"):
                text = f"{text} [shared a photo: {t['blip_caption']}]"
            speaker = anon(t.get("speaker", ""))
            turns.append(Memory(f"{speaker}: {anon(text)}", ids, date, speaker))
    facts = []
    for key, per_speaker in sorted((obj.get("observation") or {}).items()):
        m = re.match(r"session_(\d+)_observation", key)
        date = session_date.get(int(m.group(1)), 0) if m else 0
        for speaker, items in (per_speaker or {}).items():
            for item in items or []:
                if not isinstance(item, (list, tuple)) or not item or not str(item[0]).strip():
                    continue
                facts.append(Memory(anon(str(item[0]).strip()), dia_ids(item[1:] or None), date, anon(speaker)))
    questions, skipped = [], 0
    for i, qa in enumerate(obj.get("qa") or []):
        evidence = dia_ids(qa.get("evidence")) & turn_ids
        if qa.get("category") not in ANSWERABLE or not evidence or not qa.get("question"):
            skipped += 1
            continue
        questions.append(Question(f"{obj.get('sample_id', '?')}:q{i}", anon(str(qa["question"])),
                                  evidence, int(qa["category"])))
    return Conversation(str(obj.get("sample_id", f"conv-{id(obj)}")), speakers, tuple(facts), tuple(turns),
                        tuple(questions), skipped)


def load_locomo(path: str | Path, *, anonymize: bool = False) -> list[Conversation]:
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"no LoCoMo file at {path}: pass --data with the path to locomo10.json "
                           "(or a file in the same format)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path.name} is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(c, dict) and "conversation" in c for c in data):
        raise InvalidInput(f"{path.name} is not in the LoCoMo format: expected a list of conversations "
                           "with 'conversation', 'observation' and 'qa'")
    return [parse_conversation(c, anonymize=anonymize) for c in data]


def load_negatives(path: str | Path) -> list[NegativeQuery]:
    """JSON Lines of {"id", "query", "source"}; blank lines are skipped, bad lines are errors."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"no negative query file at {path}")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            out.append(NegativeQuery(str(obj.get("id", f"{path.stem}-{n}")), str(obj["query"]),
                                     str(obj.get("source") or path.stem)))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            raise InvalidInput(f"{path.name} line {n}: expected a JSON object with id, query and source") from None
    return out


def first_names(conv: Conversation) -> set[str]:
    return {s.split()[0].lower() for s in conv.speakers if s.strip()}


def cross_partner(convs: list[Conversation], i: int) -> int | None:
    """The next conversation (cyclically) that shares no speaker first name with conversation i."""
    names = first_names(convs[i])
    for step in range(1, len(convs)):
        j = (i + step) % len(convs)
        if not (first_names(convs[j]) & names):
            return j
    return None
