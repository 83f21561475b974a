"""OpenClaw-style Markdown memory imported by meaning, through the same curation as everything else.

Each unit of meaning of MEMORY.md and memory/YYYY-MM-DD.md (engine/mdunits.py; of Keepmind's own
Markdown export, each memory it holds) becomes a proposal queued as a checkpoint (trigger
`markdown-import`, the lowest priority, so an agent's own writes never wait behind a big import).
Curation then decides like for any other proposal: junk is dropped, exact duplicates and
statements a stored memory already says are skipped, a tombstoned claim stays deleted, nominees go
to the curator LLM when there is one; what it keeps is embedded on write. `outcome` reads back
what became of each unit, for the import's summary.

Before anything is queued the import is checked all or nothing, like a JSON Lines import: a unit
that holds a secret, or that curation would refuse for a size or a name, imports nothing, and the
errors name the file and line so the person can fix the file and run it again.

The units are queued in one transaction, then curated one by one: an import interrupted while
curating (a crash, a Ctrl-C) has kept some units and left the others queued, and a Keepmind that
runs for the data dir curates those. Running the import again takes over the units still queued
rather than queueing them twice, so it finishes the interrupted import and its summary counts
what they became (the units kept before the interruption are skipped as already stored).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import apsw

from .db import rows
from .errors import EngineError, InvalidInput
from .mdexported import export_units, is_export
from .mdunits import Unit, units
from .memory import Provenance
from .policy import check_name
from .secretfilter import kinds_in_words
from .store import MemoryDraft, refuse_secret_draft, validate_draft
from .writepath import checkpoints
from .writepath.proposals import Proposal

TRIGGER = "markdown-import"
DAILY_NAME = "memory/YYYY-MM-DD.md"
# What curation's decisions mean to the person importing (action -> group; reason -> words).
GROUPS = {"create": "kept", "update": "merged", "consolidate": "merged", "append": "merged",
          "skip": "skipped", "drop": "skipped", "blocked": "blocked"}
REASONS = {"duplicate": "already stored", "contained": "already said by another memory",
           "tombstone": "deleted before as wrong", "already_in_document": "already in the memory it would join",
           "model_skip": "the curator found nothing new", "ephemeral": "too slight to keep",
           "empty": "empty", "low_confidence": "too uncertain", "policy": "not allowed in this scope",
           "secret": "secret-like"}


@dataclass
class Queued:
    """What a Markdown import put in the queue: one checkpoint per unit, where each came from,
    and the lines that are not memories."""

    files: list[str] = field(default_factory=list)
    where: dict[str, str] = field(default_factory=dict)  # checkpoint id -> "file:line"
    not_memories: list[tuple[str, str]] = field(default_factory=list)  # ("file:line", reason)
    errors: list[str] = field(default_factory=list)
    # ("file:line", proposal, extra, (audience, boundary) it goes into)
    planned: list[tuple[str, Proposal, dict, tuple[str, str]]] = field(default_factory=list)
    exported_from: list[tuple[str, str]] = field(default_factory=list)  # scopes a Keepmind export's memories name
    resumed: int = 0  # units an interrupted import of the same file left queued, taken over

    @property
    def checkpoint_ids(self) -> list[str]:
        return list(self.where)


def _day(name: str) -> str | None:
    stem = name[:-3] if name.endswith(".md") else ""
    try:
        datetime.strptime(stem, "%Y-%m-%d")
    except ValueError:
        return None
    return stem


def markdown_files(path: Path) -> list[Path]:
    """MEMORY.md and the daily files of a workspace folder (memory/, or beside MEMORY.md), else the
    pages of a Keepmind Markdown export folder; or one file."""
    if path.is_file():
        return [path]
    files = [path / "MEMORY.md"] if (path / "MEMORY.md").is_file() else []
    for folder in (path / "memory", path):
        if folder.is_dir():
            files += sorted(p for p in folder.iterdir() if p.is_file() and _day(p.name))
    if not files:  # a folder `keepmind export --format markdown` wrote: one page per anchor
        files = sorted(p for p in path.iterdir() if p.suffix == ".md" and p.is_file() and is_exported(p))
    if not files:
        raise InvalidInput(f"{path} holds no MEMORY.md or {DAILY_NAME} files: give an OpenClaw workspace folder, "
                           "a folder `keepmind export --format markdown` wrote, or a Markdown file")
    return files


def is_exported(file: Path) -> bool:
    """Is this file a page `keepmind export --format markdown` wrote?"""
    try:
        return is_export(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False


def _proposal(unit: Unit, rel: str, day: str | None) -> tuple[Proposal, dict]:
    """The unit as a durable fact for curation, and its payload's provenance and authored time."""
    section = " › ".join(unit.section)
    facets = tuple(f for f in (f"section:{section}"[:200] if section else "", f"daily:{day}" if day else "") if f)
    external = {"kind": "file", "ref": rel, "line": unit.line}
    if section:
        external["section"] = section
    proposal = Proposal(memory_class="durable_fact", title=unit.title, content=unit.text, anchor=None,
                        facets=facets, confidence=0.8, subject_kind="user", explicit=True)
    extra = {"source": "import", "provenance": {"session_id": None, "turns": [], "external": [external]}}
    if unit.authored_at is not None:  # a memory of a Keepmind export: when it was said
        extra["authored_at"] = unit.authored_at
    elif day:
        extra["authored_at"] = int(datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp() * 1000)
    return proposal, extra


def _check(proposal: Proposal, extra: dict, audience: str, boundary: str) -> None:
    """Refuse now what curation would refuse for a reason the person must fix (a secret, a size)."""
    draft = validate_draft(MemoryDraft(
        title=proposal.title, body=proposal.content, memory_class="durable_fact", audience=audience,
        boundary=boundary, author_audience=audience, source="import",
        provenance=Provenance.from_obj(extra["provenance"]), facets=proposal.facets))
    refuse_secret_draft(draft)


def _payload_key(payload) -> str:
    """A payload as the queue stores it (JSON: tuples are lists), keys sorted: equal for equal units."""
    return json.dumps(json.loads(json.dumps(payload)), sort_keys=True)


def _waiting(conn: apsw.Connection, audience: str, boundary: str, now: int) -> dict[str, list[str]]:
    """The units of earlier Markdown imports into this scope still waiting for curation (queued,
    or leased by a worker, perhaps one that crashed: the queue gives those back), by payload."""
    found: dict[str, list[str]] = {}
    for row in rows(conn, "SELECT checkpoint_id, payload_json FROM memory_checkpoints WHERE trigger_type=?"
                          " AND audience=? AND boundary=? AND ((status='pending' AND available_at<=?) OR"
                          " status='leased') ORDER BY rowid", (TRIGGER, audience, boundary, now)):
        try:
            key = _payload_key(json.loads(row["payload_json"]))
        except ValueError:
            continue
        found.setdefault(key, []).append(row["checkpoint_id"])
    return found


def _enqueue_all(conn: apsw.Connection, planned: list[tuple[str, Proposal, dict, tuple[str, str]]],
                 now: int) -> list[tuple[str, str, bool]]:
    """Queue each unit into its scope, or take over the checkpoint an interrupted import of the same
    unit left waiting (a crash, a Ctrl-C): rerunning it finishes that import instead of queueing it
    twice, and its summary counts what the leftover units became. (checkpoint id, file:line, taken over)."""
    waiting: dict[tuple[str, str], dict[str, list[str]]] = {}
    out = []
    for where, proposal, extra, (audience, boundary) in planned:
        payload = {"proposal": proposal.to_payload(), **extra}
        if (audience, boundary) not in waiting:
            waiting[audience, boundary] = _waiting(conn, audience, boundary, now)
        left = waiting[audience, boundary].get(_payload_key(payload))
        if left:
            out.append((left.pop(0), where, True))
            continue
        queued = checkpoints.enqueue(conn, trigger=TRIGGER, payload=payload,
                                     audience=audience, boundary=boundary, session_id=None, now=now)
        if queued.checkpoint_id is None:  # checked above; should a rule differ, say so, never store it
            raise InvalidInput(f"{where} holds secret-like content ({kinds_in_words(queued.blocked_kinds)}): "
                               "remove it and import again")
        out.append((queued.checkpoint_id, where, False))
    return out


def queue_markdown(engine, path: Path, *, audience: str, boundary: str, own_scopes: bool = False) -> Queued:
    """Cut the files into units and queue one checkpoint per unit (nothing when any unit is refused);
    with `own_scopes`, each unit of Keepmind's Markdown export into the scope it names (plan_markdown)."""
    found = plan_markdown(path, audience=audience, boundary=boundary, own_scopes=own_scopes)
    if found.errors or not found.planned:
        return found
    for checkpoint_id, where, taken_over in engine.write(_enqueue_all, found.planned, engine.now()):
        found.where[checkpoint_id] = where
        found.resumed += taken_over
    return found


def exported_scopes(path: Path) -> list[tuple[str, str]]:
    """The (audience, boundary) scopes the memories of a Keepmind Markdown export name, sorted; none
    for other Markdown (or a file that cannot be read: the import says why)."""
    found: set[tuple[str, str]] = set()
    for file in markdown_files(path):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if is_export(text):
            found.update(u.scope for u in export_units(text).units if u.scope)
    return sorted(found)


def plan_markdown(path: Path, *, audience: str, boundary: str, own_scopes: bool = False) -> Queued:
    """The units a Markdown import would queue (checked, nothing written): the preview, and the
    first half of queue_markdown. Each goes into `audience`/`boundary`, or with `own_scopes` a unit
    of Keepmind's Markdown export into the personal or team scope it names, as a JSON Lines row
    does: a browser re-import of the browser's own export had put a team/work and a personal/work
    memory into personal/default, where the first was a copy and the second read by another
    workspace's sessions."""
    files = markdown_files(path)
    root = path if path.is_dir() else path.parent
    found = Queued()
    planned: list[tuple[str, Proposal, dict]] = []
    for file in files:
        rel = file.relative_to(root).as_posix()
        found.files.append(rel)
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            found.errors.append(f"{rel}: not UTF-8 text")
            continue
        parsed = export_units(text) if is_export(text) else units(text)
        found.exported_from = sorted({*found.exported_from, *(u.scope for u in parsed.units if u.scope)})
        found.not_memories += [(f"{rel}:{s.line}", s.reason) for s in parsed.skipped]
        for unit in parsed.units:
            proposal, extra = _proposal(unit, rel, _day(file.name))
            own = own_scopes and unit.scope and unit.scope[0] in ("personal", "team")
            try:
                scope = (unit.scope[0], check_name(unit.scope[1])) if own else (audience, boundary)
                _check(proposal, extra, *scope)
            except EngineError as exc:
                found.errors.append(f"{rel} line {unit.line}: {exc.message}")
                continue
            planned.append((f"{rel}:{unit.line}", proposal, extra, scope))
    found.planned = planned
    return found


def outcome(conn: apsw.Connection, where: dict[str, str]) -> dict:
    """What curation made of the queued units: counts per group (kept, merged, skipped, blocked,
    failed, waiting), skipped ones by reason, the memories kept, and a few examples with file:line."""
    ids = list(where)
    status: dict[str, dict] = {}
    decided: dict[str, dict] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for row in rows(conn, f"SELECT checkpoint_id, status, last_error FROM memory_checkpoints"
                              f" WHERE checkpoint_id IN ({marks})", chunk):
            status[row["checkpoint_id"]] = row
        for row in rows(conn, f"SELECT checkpoint_id, action, reason, targets_json FROM curation_events"
                              f" WHERE checkpoint_id IN ({marks}) AND action != 'dead_letter' ORDER BY event_id",
                        chunk):
            decided[row["checkpoint_id"]] = row
    counts = {"kept": 0, "merged": 0, "skipped": 0, "blocked": 0, "failed": 0, "waiting": 0}
    reasons: dict[str, int] = {}
    examples: list[str] = []
    memory_ids: list[str] = []
    for checkpoint_id in ids:
        row, event = status.get(checkpoint_id), decided.get(checkpoint_id)
        if row is None or row["status"] in ("pending", "leased"):
            counts["waiting"] += 1
        elif row["status"] == "dead":
            counts["failed"] += 1
            examples.append(f"{where[checkpoint_id]}: failed ({row['last_error']})")
        elif event is not None:
            group = GROUPS.get(event["action"], "skipped")
            counts[group] += 1
            if group in ("kept", "merged"):
                memory_ids += [t for t in json.loads(event["targets_json"] or "[]")[:1] if t not in memory_ids]
            else:
                why = REASONS.get(event["reason"], event["reason"])
                reasons[why] = reasons.get(why, 0) + 1
                if len(examples) < 10:
                    examples.append(f"{where[checkpoint_id]}: {event['action']} ({why})")
    return {"counts": counts, "skipped_reasons": reasons, "examples": examples, "memory_ids": memory_ids,
            "done": counts["waiting"] == 0}
