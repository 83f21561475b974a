"""Proposals: the observer's (and the rule extractor's) candidate memories, and the gate they pass.

The schema and the gate follow netclaw-facts §5: an operation, a class, a subject, an anchor
(name + type), title, content, aliases, facets, relations, confidence. The class forces the
storage pattern whatever operation the model asked for (durable_fact -> living document,
evidence and trace -> immutable records) and the recall mode (durable auto, evidence searchable,
trace never). Non-trace proposals need retrieval metadata (anchor, an alias, a facet); at most 3
survive a run, the most confident first.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from ..memory import MAX_BODY_CHARS, MAX_TITLE_CHARS, default_recall_mode, without_display_controls
from ..policy import MEMORY_CLASSES

MAX_PROPOSALS = 3
# Subjects that say whose a fact is, not what it is about: never an anchor name on their own.
GENERIC_SUBJECTS = frozenset({"user", "the user", "me", "i", "self", "myself", "person", "assistant", "agent",
                              "session", "team", "project", "we", "us"})
OPERATIONS = ("upsert_document", "append_record")
RELATION_MIN_CONFIDENCE = 0.9
MAX_RELATIONS = 3


@dataclass(frozen=True)
class RelationSpec:
    """An edge a proposal asserts: from `source` (None: the proposal's own anchor) to `target`.

    An exclusive relation (lives_in, works_at, home_airport) replaces the source's earlier value;
    a non-exclusive one (sister, member_of) is added next to it.
    """

    relation: str
    target: str
    target_type: str = "concept"
    source: str | None = None
    source_type: str = "concept"
    exclusive: bool = True


@dataclass(frozen=True)
class Proposal:
    memory_class: str
    title: str
    content: str
    anchor: str | None = None
    anchor_type: str = "concept"
    aliases: tuple[str, ...] = ()
    facets: tuple[str, ...] = ()
    relations: tuple[RelationSpec, ...] = ()
    confidence: float = 0.8
    subject_kind: str | None = None
    subject: str | None = None
    recall_mode: str | None = None
    explicit: bool = False
    turns: tuple[int, ...] = field(default=())

    def to_payload(self) -> dict:
        data = asdict(self)
        data["relations"] = [asdict(r) for r in self.relations]
        data["aliases"], data["facets"], data["turns"] = list(self.aliases), list(self.facets), list(self.turns)
        return data

    @classmethod
    def from_payload(cls, data: dict) -> "Proposal":
        """Inverse of to_payload (raises KeyError/TypeError/ValueError on a malformed payload)."""
        rels = tuple(RelationSpec(str(r["relation"]), str(r["target"]), str(r.get("target_type") or "concept"),
                                  source=str(r["source"]) if r.get("source") else None,
                                  source_type=str(r.get("source_type") or "concept"),
                                  exclusive=bool(r.get("exclusive", True)))
                     for r in data.get("relations") or ())
        return cls(
            memory_class=str(data["memory_class"]), title=str(data.get("title") or ""),
            content=str(data["content"]), anchor=data.get("anchor") or None,
            anchor_type=str(data.get("anchor_type") or "concept"),
            aliases=tuple(str(a) for a in data.get("aliases") or ()),
            facets=tuple(str(f) for f in data.get("facets") or ()), relations=rels,
            confidence=float(data.get("confidence", 0.8)), subject_kind=data.get("subject_kind"),
            subject=data.get("subject"), recall_mode=data.get("recall_mode"),
            explicit=bool(data.get("explicit", False)),
            turns=tuple(int(t) for t in data.get("turns") or ()),
        )


@dataclass(frozen=True)
class GateResult:
    accepted: list[Proposal]
    rejections: dict[str, int]


def _get(obj: dict, *names, default=None):
    for name in names:
        if name in obj and obj[name] not in (None, ""):
            return obj[name]
    return default


def _strings(value) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return ()
    out = []
    for v in value:
        if isinstance(v, dict):
            v = _get(v, "name", "value", "canonicalName")
        if isinstance(v, str) and v.strip() and v.strip() not in out:
            out.append(v.strip()[:200])
    return tuple(out)


def _anchor(obj: dict) -> tuple[str | None, str | None]:
    raw = _get(obj, "anchor")
    if isinstance(raw, dict):
        return _get(raw, "canonicalName", "canonical_name", "name"), _get(raw, "anchorType", "anchor_type", "type")
    if isinstance(raw, str):
        return raw, _get(obj, "anchorType", "anchor_type")
    return None, _get(obj, "anchorType", "anchor_type")


def _relations(obj: dict) -> tuple[RelationSpec, ...]:
    out = []
    for rel in obj.get("relations") or ():
        if not isinstance(rel, dict):
            continue
        name = _get(rel, "relationType", "relation_type", "relation")
        target = rel.get("targetAnchor") or rel.get("target_anchor") or rel.get("target")
        target_type = "concept"
        if isinstance(target, dict):
            target_type = _get(target, "anchorType", "anchor_type", "type", default="concept")
            target = _get(target, "canonicalName", "canonical_name", "name")
        if isinstance(name, str) and isinstance(target, str) and name.strip() and target.strip():
            out.append(RelationSpec(name.strip(), target.strip(), str(target_type)))
    return tuple(out)


def check_proposal(obj) -> tuple[Proposal | None, str | None]:
    """One raw proposal (LLM JSON, camelCase or snake_case) -> (Proposal, None) or (None, reason)."""
    if not isinstance(obj, dict):
        return None, "null-proposal"
    operation = _get(obj, "operation", default="")
    if operation not in OPERATIONS:
        return None, "invalid-operation"
    memory_class = _get(obj, "memoryClass", "memory_class", "class")
    if memory_class not in MEMORY_CLASSES:
        return None, "invalid-memory-class"
    sensitivity = _get(obj, "sensitivity", default="normal")
    if sensitivity not in ("normal", "secret"):
        return None, "invalid-sensitivity"
    if sensitivity == "secret":
        return None, "secret"  # we never keep secrets, not even as recall-never memories
    recall_mode = _get(obj, "recallMode", "recall_mode")
    if recall_mode is not None and recall_mode not in ("auto", "searchable", "never", "manual"):
        return None, "invalid-recall-mode"
    content = _get(obj, "content", default="")
    title = _get(obj, "title", default="")
    if not isinstance(content, str) or not isinstance(title, str):
        return None, "empty-content"
    # What the store refuses (memory.clean_text) is settled here, where it is the model's doing:
    # NUL and invisible controls go, and a body over the store's limit is rejected, not queued to
    # dead-letter in curation with advice for a person who never wrote it.
    content, title = without_display_controls(content).replace("\x00", "").strip(), \
        without_display_controls(title).replace("\x00", "").strip()
    if not content:
        return None, "empty-content"
    if len(content) > MAX_BODY_CHARS:
        return None, "content-too-long"
    subject_kind = _get(obj, "subjectKind", "subject_kind")
    subject = _get(obj, "subjectValue", "subject_value", "subject")
    anchor, anchor_type = _anchor(obj)
    # The subject names the anchor only when it names something: "user" is every fact about the
    # user, and made their airport, diet and dog one living document.
    named = subject if isinstance(subject, str) and subject.strip().lower() not in GENERIC_SUBJECTS else None
    anchor = anchor or named or title or None
    anchor_type = anchor_type or subject_kind or "concept"
    aliases, facets = _strings(obj.get("aliases")), _strings(obj.get("facets"))
    if memory_class != "trace" and not anchor:
        return None, "missing-retrieval-metadata"
    # A model that leaves out the lists had its every proposal refused and the fact lost when the
    # rules found none ("I drink espresso without sugar."; a walk): the anchor names them instead
    aliases = aliases or ((str(anchor),) if anchor else ())
    facets = facets or ((str(anchor_type),) if anchor_type else ())
    try:
        confidence = min(1.0, max(0.0, float(_get(obj, "confidence", default=0.8))))
    except (TypeError, ValueError):
        confidence = 0.8
    relations = ()
    if memory_class == "durable_fact" and confidence >= RELATION_MIN_CONFIDENCE:
        relations = _relations(obj)[:MAX_RELATIONS]
    return Proposal(
        memory_class=memory_class, title=title[:MAX_TITLE_CHARS], content=content,
        anchor=str(anchor).strip()[:200] if anchor else None, anchor_type=str(anchor_type)[:60],
        aliases=aliases, facets=facets, relations=relations, confidence=confidence,
        subject_kind=str(subject_kind) if subject_kind else None,
        subject=str(subject) if subject else None,
        recall_mode=default_recall_mode(memory_class),  # forced by class, not by the model
    ), None


def gate(raw: list, max_proposals: int = MAX_PROPOSALS) -> GateResult:
    """Check every raw proposal; keep the most confident `max_proposals`."""
    rejections: Counter = Counter()
    accepted: list[Proposal] = []
    for obj in raw if isinstance(raw, list) else []:
        proposal, reason = check_proposal(obj)
        if proposal is None:
            rejections[reason] += 1
        else:
            accepted.append(proposal)
    accepted.sort(key=lambda p: -p.confidence)
    if len(accepted) > max_proposals:
        rejections["max-proposals-exceeded"] += len(accepted) - max_proposals
        accepted = accepted[:max_proposals]
    return GateResult(accepted, dict(rejections))
