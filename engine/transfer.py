"""Export and import: lossless JSON Lines, a readable Markdown folder, and OpenClaw-style Markdown.

The JSON Lines export carries every row that makes up a memory (anchors, documents with all
their revisions, records with their supersede chains, edges, tombstones) with ids and timestamps
as stored, so importing it into an empty home gives back identical memories. Embeddings are not
exported: they are derived data, re-created by gap repair for whichever model is active.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import apsw

from . import importrows
from .clock import iso
from .db import rows
from .errors import EngineError, InvalidInput
from .memory import Provenance
from .policy import AUDIENCES, check_name
from .private import make_private_dir, open_private, write_private
from .store import MemoryDraft, find_fingerprint, insert_memory, refuse_secret_draft, validate_draft

FORMAT = "keepmind-export"
VERSION = 1
# Table, the export "type", and the key column; the order is the order of import.
TABLES = (
    ("memory_anchors", "anchor", "anchor_id"),
    ("memory_documents", "document", "document_id"),
    ("memory_revisions", "revision", ("document_id", "revision")),
    ("memory_records", "record", "record_id"),
    ("memory_edges", "edge", "edge_id"),
    ("tombstones", "tombstone", "tombstone_id"),
    ("anchor_aliases", "anchor_alias", ("audience", "boundary", "normalized_name")),
    ("anchor_merges", "anchor_merge", "merge_id"),
)
TYPE_TABLE = {t: (table, key) for table, t, key in TABLES}


def _columns(conn: apsw.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def export_rows(conn: apsw.Connection):
    """Every exportable row as (type, dict), parents before children (rowid order)."""
    for table, kind, _key in TABLES:
        cols = [c for c in _columns(conn, table) if c != "vector"]
        for row in rows(conn, f"SELECT {','.join(cols)} FROM {table} ORDER BY rowid"):
            yield kind, row


def export(engine, output: str | Path, *, fmt: str = "jsonl") -> int:
    """Write every memory to `output`; returns the number of memories (documents + records)."""
    output = Path(output)
    with engine.db.snapshot() as conn:
        items = list(export_rows(conn))
    count = sum(1 for kind, _ in items if kind in ("document", "record"))
    if fmt == "jsonl":
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp = output.with_name(output.name + ".tmp")
        tmp.unlink(missing_ok=True)
        with open_private(tmp) as fh:  # every memory: readable by its owner only
            fh.write(json.dumps({"type": "header", "format": FORMAT, "version": VERSION,
                                 "exported_at": engine.now()}) + "\n")
            for kind, row in items:
                fh.write(json.dumps({"type": kind, **row}, ensure_ascii=False, sort_keys=True) + "\n")
        tmp.replace(output)
    elif fmt == "markdown":
        write_markdown(items, output)
    else:
        raise InvalidInput(f"unknown export format {fmt!r}: use jsonl or markdown")
    return count


# -- Markdown export ------------------------------------------------------------------------


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:80] or "anchor"


def write_markdown(items: list[tuple[str, dict]], folder: Path) -> None:
    """One readable file per anchor (memories without an anchor go to `unanchored.md`)."""
    make_private_dir(folder)
    anchors = {r["anchor_id"]: r for k, r in items if k == "anchor"}
    revisions: dict[str, list[dict]] = {}
    for k, r in items:
        if k == "revision":
            revisions.setdefault(r["document_id"], []).append(r)
    superseded = {r["supersedes_record_id"] for k, r in items if k == "record" and r["supersedes_record_id"]}
    by_anchor: dict[str | None, list[tuple[str, dict]]] = {}
    for k, r in items:
        if k == "document" and r["deleted_at"] is None:
            by_anchor.setdefault(r["anchor_id"], []).append((k, r))
        elif k == "record" and not r["is_tombstone"] and r["record_id"] not in superseded:
            by_anchor.setdefault(r["anchor_id"], []).append((k, r))
    edges = [r for k, r in items if k == "edge"]
    used: set[str] = set()
    for anchor_id, members in by_anchor.items():
        anchor = anchors.get(anchor_id)
        name = anchor["canonical_name"] if anchor else "Unanchored memories"
        slug = _slug(name) if anchor else "unanchored"
        while slug in used:
            slug += "-2"
        used.add(slug)
        lines = [f"# {name}", ""]
        if anchor:
            lines += [f"_anchor {anchor['anchor_id']} · type {anchor['anchor_type']} · "
                      f"{anchor['audience']} / {anchor['boundary']}_", ""]
            for e in edges:
                if e["from_anchor_id"] == anchor_id:
                    target = anchors.get(e["to_anchor_id"], {}).get("canonical_name", e["to_anchor_id"])
                    until = f" until {iso(e['valid_to'])}" if e["valid_to"] else ""
                    lines.append(f"- {e['relation']} → {target} (since {iso(e['valid_from'])}{until})")
            lines.append("")
        for kind, r in sorted(members, key=lambda m: m[1]["created_at"]):
            mid = r["document_id"] if kind == "document" else r["record_id"]
            lines += [f"## {r['title']}", "",
                      f"- id: `{mid}` · class: {r['memory_class']} · {r['audience']} / {r['boundary']}",
                      f"- authored: {iso(r['authored_at'])} · created: {iso(r['created_at'])}",
                      f"- provenance: `{r['provenance_json']}`", "", r["body"], ""]
            older = sorted(revisions.get(mid, []), key=lambda v: -v["revision"])[1:]
            if older:
                lines += ["<details><summary>earlier revisions</summary>", ""]
                for v in older:
                    lines += [f"**revision {v['revision']}** ({iso(v['created_at'])})", "", v["body"], ""]
                lines += ["</details>", ""]
        write_private(folder / f"{slug}.md", "\n".join(lines))


# -- import ---------------------------------------------------------------------------------


@dataclass
class ImportReport:
    imported: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"imported": self.imported, "skipped": self.skipped, "errors": self.errors}


def import_path(engine, path: str | Path, *, audience: str = "personal", boundary: str = "default") -> dict:
    """Import a Keepmind JSON Lines export, or OpenClaw-style Markdown memory (folder or file)."""
    path = Path(path)
    if not path.exists():
        raise InvalidInput(f"{path} does not exist: give a .jsonl export, a Markdown file or a folder")
    if path.is_file() and path.suffix in (".jsonl", ".json", ".ndjson"):
        report = import_jsonl(engine, path)
    else:
        if audience not in AUDIENCES or audience == "public":
            raise InvalidInput(f"a Markdown import needs a personal or team audience, not {audience!r}")
        report = import_markdown(engine, path, audience=audience, boundary=check_name(boundary))
    if report.imported:
        engine.notify_written([])
    return report.as_dict()


def parse_jsonl(path: Path) -> tuple[list[tuple[int, str, dict]], list[str]]:
    """(line, type, object) for every row of the file, and errors naming the lines that are not rows."""
    entries, errors = [], []
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                errors.append(f"line {n}: not UTF-8 text")
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"line {n}: not JSON ({exc.msg})")
                continue
            except RecursionError:
                errors.append(f"line {n}: nested too deeply")
                continue
            kind = obj.pop("type", None) if isinstance(obj, dict) else None
            if not isinstance(kind, str):
                errors.append(f"line {n}: expected an object with a 'type'")
                continue
            if kind == "header":
                if obj.get("format") != FORMAT:
                    errors.append(f"line {n}: not a Keepmind export (format {obj.get('format')!r})")
                continue
            if kind not in TYPE_TABLE:
                errors.append(f"line {n}: unknown type {kind[:40]!r}")
                continue
            entries.append((n, kind, obj))
    return entries, errors


def import_jsonl(engine, path: Path) -> ImportReport:
    """All-or-nothing: a file with any bad line imports nothing and says which lines to fix.

    Every row is checked like API input and may link only to rows of the same file; a stored
    memory is never revised or superseded (engine/importrows.py).
    """
    entries, errors = parse_jsonl(path)
    checked, problems = importrows.check_lines(entries)
    if errors or problems:
        return ImportReport(errors=sorted(errors + problems, key=_line_number))
    try:
        imported, skipped = engine.write(importrows.write_rows, checked)
    except importrows.ImportRefused as exc:
        return ImportReport(errors=exc.errors)
    return ImportReport(imported=imported, skipped=skipped)


def _line_number(error: str) -> int:
    match = re.match(r"line (\d+):", error)
    return int(match.group(1)) if match else 0


# -- OpenClaw-style Markdown ------------------------------------------------------------------

DAILY_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")


def markdown_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = []
    if (path / "MEMORY.md").exists():
        files.append(path / "MEMORY.md")
    daily = path / "memory"
    for folder in (daily, path):
        if folder.is_dir():
            files += sorted(p for p in folder.iterdir() if DAILY_RE.match(p.name))
    if not files:
        raise InvalidInput(f"{path} holds no MEMORY.md or memory/YYYY-MM-DD.md files")
    return files


def split_markdown(text: str) -> list[tuple[str | None, str, int]]:
    """Split a memory file into items: each top-level bullet or paragraph, under its heading."""
    items: list[tuple[str | None, str, int]] = []
    heading: str | None = None
    current: list[str] = []
    start = 0

    def flush():
        body = "\n".join(current).strip()
        if body:
            items.append((heading, body, start))
        current.clear()

    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            flush()
            heading = stripped.lstrip("#").strip() or heading
        elif not stripped:
            flush()
        elif re.match(r"^[-*+]\s+|^\d+[.)]\s+", line):  # a new top-level item
            flush()
            current.append(re.sub(r"^([-*+]|\d+[.)])\s+", "", line).strip())
            start = n
        else:
            if not current:
                start = n
            current.append(stripped)
    flush()
    return items


def import_markdown(engine, path: Path, *, audience: str, boundary: str) -> ImportReport:
    """All-or-nothing like JSON Lines: an item that cannot be stored (a secret, a name or size the
    API refuses) imports nothing, and the errors name the file and line."""
    files = markdown_files(path)
    root = path if path.is_dir() else path.parent
    now = engine.now()
    drafts: list[MemoryDraft] = []
    errors: list[str] = []
    for file in files:
        rel = file.relative_to(root).as_posix()
        day = DAILY_RE.match(file.name)
        authored = (int(datetime.strptime(day.group(1), "%Y-%m-%d").replace(tzinfo=timezone.utc)
                        .timestamp() * 1000) if day else now)
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            errors.append(f"{rel}: not UTF-8 text")
            continue
        for heading, body, line in split_markdown(text):
            first = body.splitlines()[0]
            title = first[:72] if not heading or heading.lower() in ("memory", "notes") else heading[:72]
            if day:
                title = f"{day.group(1)}: {first[:60]}"
            try:
                draft = validate_draft(MemoryDraft(
                    title=title, body=body, memory_class="durable_fact", audience=audience,
                    boundary=boundary, author_audience=audience, source="import",
                    provenance=Provenance(external=({"kind": "file", "ref": rel, "line": line},)),
                    authored_at=authored, facets=(f"daily:{day.group(1)}",) if day else (),
                    anchor=heading if heading and not day else None, confidence=0.8,
                ))
                refuse_secret_draft(draft)
            except EngineError as exc:
                errors.append(f"{rel} line {line}: {exc.message}")
                continue
            drafts.append(draft)
    if errors:
        return ImportReport(errors=errors)
    imported, skipped = engine.write(_insert_drafts, drafts, now)
    return ImportReport(imported=imported, skipped=skipped)


def _insert_drafts(conn, drafts: list[MemoryDraft], now: int) -> tuple[int, int]:
    imported = skipped = 0
    for draft in drafts:
        if find_fingerprint(conn, draft.body, draft.audience, draft.boundary):
            skipped += 1
            continue
        insert_memory(conn, draft, now)
        imported += 1
    return imported, skipped

