"""Memory values: ids, classes, normalization, fingerprints, and the item shape reads return."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import uuid
from dataclasses import dataclass, field

from .clock import DAY_MS, HOUR_MS
from .errors import InvalidInput
from .person import third_person
from .policy import MEMORY_CLASSES

ID_RE = re.compile(r"^(doc|rec)-[0-9a-f]{32}$")
EVIDENCE_TTL_MS = 30 * DAY_MS
TRACE_TTL_MS = 72 * HOUR_MS
MAX_TITLE_CHARS = 300
MAX_BODY_CHARS = 100_000
SOURCES = ("observer", "tool", "ui", "import", "compaction", "subagent", "api", "eval")
RECALL_MODES = ("auto", "searchable", "manual", "never")


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def kind_for_class(memory_class: str) -> str:
    """The class forces the storage pattern: durable facts are living documents, the rest records."""
    check_class(memory_class)
    return "document" if memory_class == "durable_fact" else "record"


def default_recall_mode(memory_class: str) -> str:
    return {"durable_fact": "auto", "evidence": "searchable", "trace": "never"}[memory_class]


def expires_for(memory_class: str, fresh_ms: int) -> int | None:
    """Expiry is a read-time predicate computed from when the memory was last fresh."""
    if memory_class == "evidence":
        return fresh_ms + EVIDENCE_TTL_MS
    if memory_class == "trace":
        return fresh_ms + TRACE_TTL_MS
    return None


def check_class(memory_class: str) -> None:
    if memory_class not in MEMORY_CLASSES:
        raise InvalidInput(
            f"unknown memory class {memory_class!r}: use one of {', '.join(MEMORY_CLASSES)}"
        )


def parse_id(raw: object) -> str:
    """A memory id copied verbatim: `doc-` or `rec-` and 32 lowercase hex digits."""
    if not isinstance(raw, str):
        raise InvalidInput("a memory id must be a string like doc-<32 hex> or rec-<32 hex>")
    text = raw.strip()
    if not ID_RE.match(text):
        raise InvalidInput(
            f"{raw!r} is not a memory id: ids look like doc-<32 hex digits> or rec-<32 hex digits>; "
            "copy them verbatim from find results"
        )
    return text


def normalize_text(text: str) -> str:
    """Casefold, NFKC, and collapse everything that is not a letter or digit into single spaces."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.findall(r"\w+", text))


def fingerprint(body: str) -> str:
    """The normalized fingerprint of a claim: equal for texts that differ only in case/punctuation."""
    return hashlib.sha256(normalize_text(body).encode()).hexdigest()


def claim_fingerprints(body: str) -> tuple[str, str]:
    """(its fingerprint, that of the claim however its subject is said): a claim said by the user
    ("My dog is a beagle.", "I am a plumber.") and about the user ("User's dog is a beagle.", "User
    is a plumber.", as the observer writes what the user said) is one claim, so a deleted one
    refuses the other. The second is the claim written of the user (person.third_person) with
    "User's" read as "my"; both are the same for a claim with neither "I" nor "User's" in it."""
    said = re.sub(r"\buser s\b", "my", normalize_text(third_person(body, "User")))
    return fingerprint(body), hashlib.sha256(said.encode()).hexdigest()


def content_hash(title: str, body: str) -> str:
    """Identifies the text a vector was computed from (title and body, whitespace-normalized)."""
    norm = lambda s: " ".join(s.lower().split())  # noqa: E731
    return hashlib.sha256(f"{norm(title)}\n{norm(body)}".encode()).hexdigest()


# Characters that carry no words and only change how text around them shows: bidi embeddings,
# overrides and isolates (U+202E turns "txt.exe" into "exe.txt" on screen, and a page's own words
# after it), and C0 controls other than tab and line breaks (a bell, an escape, a form feed).
# They are taken out of memory text where it enters; a form feed or vertical tab is a line break.
_DISPLAY_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\x01-\x08\x0e-\x1f\x7f]")
_LINE_FEEDS = re.compile("[\x0b\x0c]")


def without_display_controls(text: str) -> str:
    return _DISPLAY_CONTROLS.sub("", _LINE_FEEDS.sub("\n", text))


def clean_text(value: object, what: str, *, limit: int, required: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string")
    text = without_display_controls(value).strip()
    if required and not text:
        raise InvalidInput(f"{what} is empty: give the memory a title" if what == "title"
                           else f"{what} is empty: give the memory some text")
    if "\x00" in text:
        raise InvalidInput(f"{what} holds a control or invisible character (NUL, \\u0000): remove it")
    if len(text) > limit:
        raise InvalidInput(f"{what} is {len(text)} characters; the limit is {limit}")
    return text


_SENTENCE_END = re.compile(r"(?<=[.!?])(?:\s|$)")


def opening(body: str) -> str:
    """A body's first sentence, as a title (cut at a word, with an ellipsis, when too long)."""
    text = " ".join((body or "").split())
    end = _SENTENCE_END.search(text)
    first = text[:end.start()] if end else text
    if len(first) <= MAX_TITLE_CHARS:
        return first
    return first[:MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def title_follows(title: str, old_body: str, new_body: str) -> str:
    """The title once the body changed: a title that was the old body's opening sentence becomes
    the new body's (it said the old fact: "User's sister Anna lives in Lisbon." over "…Porto");
    any other title, a person's own label, stays."""
    if not title or title.strip() != opening(old_body):
        return title
    return opening(new_body) or title


def clean_terms(values: object, what: str) -> list[str]:
    """Aliases, facets and tags: a list of short strings (a single string is accepted)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise InvalidInput(f"{what} must be a list of strings")
    out: list[str] = []
    for v in values:
        if not isinstance(v, str):
            raise InvalidInput(f"{what} must be a list of strings")
        v = v.strip()
        if v and v not in out:
            out.append(v[:200])
    return out


def terms_text(values: list[str]) -> str:
    """Aliases and facets are stored one per line (the FTS tokenizer splits them)."""
    return "\n".join(values)


def text_terms(stored: str) -> list[str]:
    return [v for v in (stored or "").split("\n") if v]


_WORD = re.compile(r"[\w'-]+")


def aliases_after(stored: str, old_text: str, new_text: str) -> str:
    """A memory's search aliases (stored form) after its text changed: a word the old text said and
    the new one no longer does leaves them too ("lives Porto wife" -> "lives wife" when Porto
    became Madrid: a search for Porto found the corrected memory). A word the text never said (a
    nickname given as an alias) stays."""
    before = {w.lower() for w in _WORD.findall(old_text)}
    after = {w.lower() for w in _WORD.findall(new_text)}
    gone = before - after
    terms = []
    for term in text_terms(stored):
        kept = " ".join(w for w in term.split() if w.strip(".,;:!?").lower() not in gone)
        if kept and kept not in terms:
            terms.append(kept)
    return terms_text(terms)


@dataclass(frozen=True)
class Provenance:
    """Where a memory came from: session, turns, and external references (files, datasets)."""

    session_id: str | None = None
    turns: tuple = ()
    external: tuple = ()

    def to_json(self) -> str:
        return json.dumps(
            {"session_id": self.session_id, "turns": list(self.turns), "external": list(self.external)},
            sort_keys=True,
        )

    @classmethod
    def from_obj(cls, obj: object) -> "Provenance":
        if obj is None:
            return cls()
        if isinstance(obj, Provenance):
            return obj
        if isinstance(obj, str):
            obj = json.loads(obj or "{}")
        if not isinstance(obj, dict):
            raise InvalidInput("provenance must be an object with session_id, turns and external")
        turns = obj.get("turns") or []
        external = obj.get("external") or []
        if not isinstance(turns, list) or not isinstance(external, list):
            raise InvalidInput("provenance turns and external must be lists")
        return cls(obj.get("session_id"), tuple(turns), tuple(external))

    def as_dict(self) -> dict:
        return {"session_id": self.session_id, "turns": list(self.turns),
                "external": list(self.external)}


@dataclass(frozen=True)
class MemoryItem:
    """One memory as reads return it."""

    id: str
    kind: str  # "document" | "record"
    memory_class: str
    title: str
    body: str
    audience: str
    boundary: str
    source: str
    sensitivity: str
    recall_mode: str
    confidence: float
    aliases: tuple[str, ...]
    facets: tuple[str, ...]
    anchor_id: str | None
    provenance: dict
    authored_at: int
    created_at: int
    updated_at: int
    expires_at: int | None
    revision: int
    stale: bool = False
    supersedes: str | None = None
    score: float | None = None
    extra: dict = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "kind": self.kind,
            "class": self.memory_class,
            "title": self.title,
            "content": self.body,
            "audience": self.audience,
            "boundary": self.boundary,
            "source": self.source,
            "sensitivity": self.sensitivity,
            "recall_mode": self.recall_mode,
            "confidence": self.confidence,
            "aliases": list(self.aliases),
            "facets": list(self.facets),
            "anchor_id": self.anchor_id,
            "provenance": self.provenance,
            "authored_at": self.authored_at,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "expires_at": self.expires_at,
            "revision": self.revision,
            "stale": self.stale,
            "supersedes": self.supersedes,
        }


def doc_columns(a: str = "m") -> str:
    """The document columns every read selects, in MemoryItem's shape."""
    return (
        f"{a}.document_id AS id, 'document' AS kind, {a}.memory_class, {a}.title, {a}.body, "
        f"{a}.audience, {a}.boundary, {a}.source, {a}.sensitivity, {a}.recall_mode, {a}.confidence, "
        f"{a}.aliases, {a}.facets, {a}.anchor_id, {a}.provenance_json, {a}.authored_at, {a}.created_at, "
        f"{a}.updated_at, {a}.expires_at, {a}.revision, NULL AS supersedes"
    )


def rec_columns(a: str = "m") -> str:
    """The record columns every read selects, in MemoryItem's shape."""
    return (
        f"{a}.record_id AS id, 'record' AS kind, {a}.memory_class, {a}.title, {a}.body, "
        f"{a}.audience, {a}.boundary, {a}.source, {a}.sensitivity, {a}.recall_mode, {a}.confidence, "
        f"{a}.aliases, {a}.facets, {a}.anchor_id, {a}.provenance_json, {a}.authored_at, {a}.created_at, "
        f"{a}.created_at AS updated_at, {a}.expires_at, 1 AS revision, {a}.supersedes_record_id AS supersedes"
    )


def item_from_row(row: dict, now_ms: int, score: float | None = None) -> MemoryItem:
    expires = row["expires_at"]
    return MemoryItem(
        id=row["id"],
        kind=row["kind"],
        memory_class=row["memory_class"],
        title=row["title"],
        body=row["body"],
        audience=row["audience"],
        boundary=row["boundary"],
        source=row["source"],
        sensitivity=row["sensitivity"],
        recall_mode=row["recall_mode"],
        confidence=row["confidence"],
        aliases=tuple(text_terms(row["aliases"])),
        facets=tuple(text_terms(row["facets"])),
        anchor_id=row["anchor_id"],
        provenance=json.loads(row["provenance_json"] or "{}"),
        authored_at=row["authored_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        expires_at=expires,
        revision=row["revision"],
        stale=expires is not None and expires <= now_ms,
        supersedes=row.get("supersedes"),
        score=score,
    )
