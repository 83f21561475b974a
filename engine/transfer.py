"""Export and import: lossless JSON Lines, readable Markdown, and OpenClaw-style Markdown (mdimport.py).

The JSON Lines export carries every row that makes up a memory (anchors, documents with all
their revisions, records with their supersede chains, edges, tombstones) with ids and timestamps
as stored, so importing it into an empty home gives back identical memories. A tombstone carries
the fingerprints of the memory's earlier wordings (`earlier_fingerprints`), so they stay refused
too. A tombstone left by rejecting a proposal in review names that proposal (a checkpoint), so the
proposal travels with it while the rejection stands: after an import the Deleted list still says
what was rejected, and Restore still puts it back in review. Embeddings are not exported: they are
derived data, re-created by gap repair for whichever model is active.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import apsw

from . import importrows, mdimport
from .clock import iso
from .db import rows
from .errors import InvalidInput
from .policy import AUDIENCES, check_name
from .private import make_private_dir, open_private, unsafe_member, write_private

STAGING = "imports"  # the data dir's folder for uploads and unpacked zips waiting to be imported
MAX_MEMBERS = 20_000
CHUNK = 1 << 20

FORMAT = "keepmind-export"
VERSION = 1  # what export writes; import reads this version and every older one
READS = f"format version {VERSION}" if VERSION == 1 else f"format versions 1 to {VERSION}"
# Table, the export "type", and the key column; the order is the order of import.
TABLES = (
    ("memory_anchors", "anchor", "anchor_id"),
    ("memory_documents", "document", "document_id"),
    ("memory_revisions", "revision", ("document_id", "revision")),
    ("memory_records", "record", "record_id"),
    ("memory_edges", "edge", "edge_id"),
    ("memory_checkpoints", "rejected_proposal", "checkpoint_id"),
    ("tombstones", "tombstone", "tombstone_id"),
    ("anchor_aliases", "anchor_alias", ("audience", "boundary", "normalized_name")),
    ("anchor_merges", "anchor_merge", "merge_id"),
)
TYPE_TABLE = {t: (table, key) for table, t, key in TABLES}
# Columns an export leaves out: an import works them out again (a document's bearing, from its text).
DERIVED = ("vector", "bears_on")


def _columns(conn: apsw.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


# The checkpoint columns a rejected proposal keeps (the queue's own state is not exported: it is
# imported as rejected, with nothing pending).
PROPOSAL_COLUMNS = ("checkpoint_id", "session_id", "trigger_type", "priority", "payload_json", "audience",
                    "boundary", "created_at", "updated_at", "completed_at")


def _rejected_proposals(conn: apsw.Connection) -> list[dict]:
    """The proposals rejected in review whose tombstone stands (the checkpoints it names)."""
    return rows(conn, f"SELECT {','.join(PROPOSAL_COLUMNS)} FROM memory_checkpoints WHERE status = 'discarded'"
                      " AND checkpoint_id IN (SELECT memory_id FROM tombstones WHERE lifted_at IS NULL)"
                      " ORDER BY rowid")


def _earlier_fingerprints(conn: apsw.Connection) -> dict[str, list[str]]:
    """Each tombstone's fingerprints of the memory's earlier wordings (store.delete_memory), sorted."""
    found: dict[str, list[str]] = {}
    for tombstone_id, fingerprint in conn.execute(
            "SELECT tombstone_id, fingerprint FROM tombstone_fingerprints ORDER BY tombstone_id, fingerprint"):
        found.setdefault(tombstone_id, []).append(fingerprint)
    return found


def export_rows(conn: apsw.Connection):
    """Every exportable row as (type, dict), parents before children (rowid order)."""
    for table, kind, _key in TABLES:
        if kind == "rejected_proposal":
            yield from ((kind, row) for row in _rejected_proposals(conn))
            continue
        cols = [c for c in _columns(conn, table) if c not in DERIVED]
        earlier = _earlier_fingerprints(conn) if kind == "tombstone" else {}
        for row in rows(conn, f"SELECT {','.join(cols)} FROM {table} ORDER BY rowid"):
            # A tombstone stays one row: the hashes of the wordings its memory had before its last
            # travel in it, and only when there are some (an older Keepmind then still reads the file).
            if kind == "tombstone" and row["tombstone_id"] in earlier:
                row["earlier_fingerprints"] = earlier[row["tombstone_id"]]
            yield kind, row


@dataclass(frozen=True)
class Exported:
    """What an export wrote: `memories` counts live memories as `stats` does; `deleted` (deleted
    documents and records, kept so their tombstones hold) and `earlier` (versions of edited records)
    travel with them but are not memories."""

    memories: int
    deleted: int = 0
    earlier: int = 0
    path: Path | None = None
    single_file: bool = True
    made_folder: Path | None = None  # the first folder above `path` that did not exist: the export made it


def memory_kinds(items: list[tuple[str, dict]]) -> dict[str, str]:
    """What each document and record of these rows is to a person: "memory" (live, as `stats`
    counts it), "deleted" (kept so its tombstone holds), "earlier" (a version of an edited record),
    or "" (a record deleted since, counted once, as its deleted version). Export and import count
    with this, so the numbers an import prints are the ones its export printed."""
    superseders = {r["supersedes_record_id"]: r for k, r in items if k == "record" and r.get("supersedes_record_id")}
    kinds = {}
    for kind, row in items:
        if kind == "document":
            kinds[row["document_id"]] = "memory" if row.get("deleted_at") is None else "deleted"
        elif kind == "record":
            if row.get("is_tombstone"):
                kinds[row["record_id"]] = "deleted"
            elif row["record_id"] in superseders:
                kinds[row["record_id"]] = "" if superseders[row["record_id"]].get("is_tombstone") else "earlier"
            else:
                kinds[row["record_id"]] = "memory"
    return kinds


def count_kinds(kinds: dict[str, str], ids) -> tuple[int, int, int]:
    """(memories, deleted, earlier versions) among these ids."""
    found = [kinds.get(i, "") for i in ids]
    return found.count("memory"), found.count("deleted"), found.count("earlier")


def count_exported(items: list[tuple[str, dict]]) -> tuple[int, int, int]:
    """(live memories, deleted ones, earlier versions) among exported rows."""
    kinds = memory_kinds(items)
    return count_kinds(kinds, kinds)


def carried_said(deleted: int, earlier: int) -> str:
    """What travels with the memories, in the words export and import both print ("" for nothing)."""
    also = []
    if deleted:
        also.append(f"{deleted} deleted {'memory' if deleted == 1 else 'memories'}, kept so "
                    f"{'its tombstone holds' if deleted == 1 else 'their tombstones hold'}")
    if earlier:
        also.append(f"{earlier} earlier {'version' if earlier == 1 else 'versions'} of edited records")
    return f"with {' and '.join(also)}" if also else ""


def export(engine, output: str | Path, *, fmt: str = "jsonl", history: bool = False) -> Exported:
    """Write every memory to `output`: JSON Lines (lossless), or readable Markdown: one file when
    `output` ends in `.md`, else a folder with one file per anchor. Markdown carries each memory as
    it stands; with `history`, a document's earlier revisions too (a correction's wrong text
    included, so only when asked: Markdown is the export people pass on)."""
    output = export_target(output, fmt)
    made = next((p for p in reversed(output.parents) if not p.exists()), None)  # a folder export's own is asked for
    with engine.db.snapshot() as conn:
        items = list(export_rows(conn))
    live, deleted, earlier = count_exported(items)
    single = True
    if fmt == "jsonl":
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp = output.with_name(output.name + ".tmp")
        tmp.unlink(missing_ok=True)
        try:
            with open_private(tmp) as fh:  # every memory: readable by its owner only
                fh.write(json.dumps({"type": "header", "format": FORMAT, "version": VERSION,
                                     "exported_at": engine.now()}) + "\n")
                for kind, row in items:
                    fh.write(json.dumps({"type": kind, **row}, ensure_ascii=False, sort_keys=True) + "\n")
            tmp.replace(output)
        except BaseException:
            tmp.unlink(missing_ok=True)  # never a half-written copy of every memory left behind
            raise
    else:
        pages = markdown_pages(items, history=history)
        if output.suffix.lower() == ".md":
            output.parent.mkdir(parents=True, exist_ok=True)
            write_private(output, "\n".join(text for _, text in pages) or "# No memories\n")
        else:
            single = False
            make_private_dir(output)
            for slug, text in pages:
                write_private(output / f"{slug}.md", text)
    return Exported(live, deleted, earlier, output, single, made)


def export_target(output: str | Path, fmt: str) -> Path:
    """Where an export may be written, or InvalidInput saying why not: JSON Lines and a `.md`
    Markdown export are one file (not a folder, not the empty path, which is the current folder);
    a Markdown export to any other name is a folder (not a file)."""
    if fmt not in ("jsonl", "markdown"):
        raise InvalidInput(f"unknown export format {fmt!r}: use jsonl or markdown")
    if not str(output).strip():
        raise InvalidInput("give the file to export to: a .jsonl file, or for Markdown a .md file or a folder")
    path = Path(output)
    one_file = fmt == "jsonl" or path.suffix.lower() == ".md"
    if one_file and path.is_dir():
        name = "keepmind.jsonl" if fmt == "jsonl" else "keepmind.md"
        raise InvalidInput(f"{path} is a folder: give the file to write, such as {path / name}")
    if not one_file and path.exists() and not path.is_dir():
        raise InvalidInput(f"{path} is a file: a Markdown export to a folder needs a folder, or a name ending in .md")
    return path


# -- Markdown export ------------------------------------------------------------------------


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:80] or "anchor"


def markdown_pages(items: list[tuple[str, dict]], *, history: bool = False) -> list[tuple[str, str]]:
    """(slug, Markdown) per anchor, memories without an anchor under `unanchored`. Its layout is
    read back by engine/mdexported.py: change the two together."""
    pages: list[tuple[str, str]] = []
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
    # (memory, when) of each standing tombstone: an edge its memory's deletion as wrong closed was never so
    deleted_as_wrong = {r["memory_id"]: r["created_at"] for k, r in items
                        if k == "tombstone" and r.get("memory_id") and r.get("lifted_at") is None}
    # an anchor that holds no memory but says something (the user's anchor: "sister → Anna") gets
    # its page too, or those edges would be in no file
    for e in edges:
        if (history or e["valid_to"] is None) and e["from_anchor_id"] in anchors:
            by_anchor.setdefault(e["from_anchor_id"], [])
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
                # as it stands: a retired edge (a correction's wrong value, a former home) only with history
                if e["from_anchor_id"] == anchor_id and (history or e["valid_to"] is None):
                    target = anchors.get(e["to_anchor_id"], {}).get("canonical_name", e["to_anchor_id"])
                    lines.append(f"- {e['relation']} → {target} ({_edge_when(e, deleted_as_wrong)})")
            lines.append("")
        for kind, r in sorted(members, key=lambda m: m[1]["created_at"]):
            mid = r["document_id"] if kind == "document" else r["record_id"]
            lines += [f"## {r['title']}", "",
                      f"- id: `{mid}` · class: {r['memory_class']} · {r['audience']} / {r['boundary']}",
                      f"- authored: {iso(r['authored_at'])} · created: {iso(r['created_at'])}",
                      f"- provenance: `{r['provenance_json']}`", "", r["body"], ""]
            older = sorted(revisions.get(mid, []), key=lambda v: -v["revision"])[1:]
            if older and history:
                lines += ["<details><summary>earlier revisions</summary>", ""]
                for v in older:
                    lines += [f"**revision {v['revision']}** ({iso(v['created_at'])})", "", v["body"], ""]
                lines += ["</details>", ""]
        pages.append((slug, "\n".join(lines)))
    return pages


def _edge_when(edge: dict, deleted_as_wrong: dict[str, int]) -> str:
    """When an exported edge held, as the anchor page says it (graph.Edge.corrected): a correction
    that closed it where it began, or the deletion as wrong of the memory that said it, means it was
    never so, not that it held until then."""
    since, until = edge["valid_from"], edge["valid_to"]
    if until is None:
        return f"since {iso(since)}"
    deleted = deleted_as_wrong.get(edge.get("asserted_by"))
    if deleted is not None and deleted >= until:  # as graph.WRONG_SQL reads it
        return f"never so: said {iso(since)}, deleted as wrong {iso(deleted)}"
    if until == since:
        return f"never so: said and corrected {iso(since)}"
    return f"since {iso(since)} until {iso(until)}"


# -- import ---------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What a JSON Lines import did, counted as its export counted: `imported` and `skipped` (already
    stored as they are) are memories; `deleted` and `earlier` were written with them."""

    imported: int = 0
    skipped: int = 0
    deleted: int = 0
    earlier: int = 0
    erased: int = 0  # memories this store erased for good: left out, with what only they named
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"imported": self.imported, "skipped": self.skipped, "deleted": self.deleted,
                "earlier": self.earlier, "erased": self.erased, "errors": self.errors}


def import_path(engine, path: str | Path, *, audience: str = "personal", boundary: str = "default",
                as_exported: bool = False) -> dict:
    """Import a Keepmind JSON Lines export (rows written as they are, in their own scopes), or
    OpenClaw-style Markdown memory (or Keepmind's Markdown export), a folder or a file, into
    `audience`/`boundary`: its units of meaning are queued for curation (engine/mdimport.py), and
    `checkpoints` maps each checkpoint to the file:line it came from (mdimport.outcome says what
    became of them). A .zip of any of these is unpacked first, checked as a browser upload is.

    With `as_exported`, each memory of Keepmind's own Markdown export goes back into the scope it
    names, not `audience`/`boundary` (which other Markdown goes into): there its deletions still
    refuse what was deleted. `exported_from` lists the scopes an export names, so a caller can say
    when they differ from `scope`; `scopes`, where the units went."""
    if not str(path).strip():  # Path("") is the current folder: never imported by a slip
        raise InvalidInput("give what to import: a .jsonl export, a Markdown file, a folder or a .zip")
    path = Path(path)
    if not path.exists():
        raise InvalidInput(f"{path} does not exist: give a .jsonl export, a Markdown file, a folder or a .zip")
    if path.is_file() and path.suffix.lower() == ".zip":
        return _import_zip(engine, path, audience=audience, boundary=boundary, as_exported=as_exported)
    if path.is_file():
        refuse_empty(path, path.name)
    if path.is_file() and path.suffix in (".jsonl", ".json", ".ndjson"):
        report = import_jsonl(engine, path)
        if report.imported or report.deleted or report.earlier:
            engine.notify_written([])
        return {"format": "jsonl", **report.as_dict()}
    exported_from = mdimport.exported_scopes(path)
    own = [s for s in exported_from if s[0] in ("personal", "team")] if as_exported else []
    if len(own) == 1:
        audience, boundary = own[0]
    if audience not in AUDIENCES or audience == "public":
        raise InvalidInput(f"a Markdown import needs a personal or team audience, not {audience!r}")
    queued = mdimport.queue_markdown(engine, path, audience=audience, boundary=check_name(boundary),
                                     own_scopes=bool(own))
    scopes = sorted({scope for *_, scope in queued.planned})
    return {"format": "markdown", "files": queued.files, "queued": len(queued.where), "resumed": queued.resumed,
            "checkpoints": queued.where, "not_memories": queued.not_memories, "errors": queued.errors,
            "scope": {"audience": audience, "boundary": boundary},
            "scopes": [{"audience": a, "boundary": b} for a, b in scopes],
            "exported_from": [{"audience": a, "boundary": b} for a, b in exported_from]}


def _import_zip(engine, archive: Path, *, audience: str, boundary: str, as_exported: bool = False) -> dict:
    """A zip (of a JSON Lines export, of Keepmind's Markdown export, of an OpenClaw-style folder)
    unpacked into a private folder of the data dir with the browser upload's checks (`unzip`), its
    content imported, the folder removed."""
    limit = int(engine.settings["server.max_upload_bytes"])
    folder = make_private_dir(make_private_dir(Path(engine.home) / STAGING) / uuid.uuid4().hex)
    try:
        unzip(archive, folder, limit, archive.name)
        target = import_target(folder)
        if target.is_file():
            refuse_empty(target, f"{target.name} in {archive.name}")
        return import_path(engine, target, audience=audience, boundary=boundary, as_exported=as_exported)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def refuse_empty(path: Path, label: str) -> None:
    """An empty file (nothing but blank lines) holds nothing to import: say so, rather than that
    everything in it is stored already."""
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            if chunk.strip():
                return
    raise InvalidInput(f"{label} is empty: there is nothing to import in it")


def unzip(archive: Path, dest: Path, limit: int, label: str) -> None:
    """Unpack a zip whose members all stay inside `dest`, are plain files, and add up under `limit`."""
    if not zipfile.is_zipfile(archive):
        raise InvalidInput(f"{label} is not a zip archive: give a .zip, a .jsonl export or a .md file")
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise InvalidInput(f"{label} holds {len(infos):,} files; an import takes at most {MAX_MEMBERS:,}")
        total = 0
        for info in infos:
            if problem := unsafe_member(info):
                raise InvalidInput(f"{label} holds {info.filename!r}, {problem}: nothing was imported")
            total += info.file_size
            if total > limit:
                raise InvalidInput(f"{label} unpacks to more than {limit:,} bytes: nothing was imported")
        for info in infos:
            target = dest.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
            if info.is_dir():
                make_private_dir(target)
                continue
            make_private_dir(target.parent)
            try:
                with zf.open(info) as src, open_private(target, "wb") as out:
                    copied = 0
                    while chunk := src.read(CHUNK):
                        copied += len(chunk)
                        if copied > info.file_size:
                            raise InvalidInput(f"{info.filename} in {label} holds more than it declares: the "
                                               "archive is damaged; nothing was imported")
                        out.write(chunk)
            except (zipfile.BadZipFile, EOFError, ValueError) as exc:
                raise InvalidInput(f"{info.filename} in {label} cannot be read ({exc}): the archive is damaged; "
                                   "nothing was imported") from None


def import_target(folder: Path) -> Path:
    """What an unpacked zip holds to import: the one export file, the folder of OpenClaw-style
    Markdown memory, the folder of Keepmind's Markdown export pages, or its one Markdown file."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    exports = [p for p in files if p.suffix in (".jsonl", ".ndjson")]
    if len(exports) == 1 and not any(p.name == "MEMORY.md" for p in files):
        return exports[0]
    memory = [p for p in files if p.name == "MEMORY.md"] + [p for p in files if p.parent.name == "memory"]
    if memory:
        top = min(memory, key=lambda p: len(p.parts))
        return top.parent if top.name == "MEMORY.md" else top.parent.parent
    markdown = [p for p in files if p.suffix == ".md"]
    if len(markdown) == 1:
        return markdown[0]
    pages = [p for p in markdown if mdimport.is_exported(p)]  # `keepmind export --format markdown`, zipped
    if pages:
        return min(pages, key=lambda p: len(p.parts)).parent
    raise InvalidInput("nothing to import was found: give a Keepmind export (.jsonl, or the zip of its Markdown "
                       "pages), a MEMORY.md, or a zip of a folder holding MEMORY.md and memory/YYYY-MM-DD.md files")


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
                version = obj.get("version", VERSION)  # a header without one is read as before
                if isinstance(version, bool) or not isinstance(version, int) or version < 1:
                    errors.append(f"line {n}: unknown export version {str(version)[:20]!r}")
                elif version > VERSION:
                    # Refused outright, not as one error among the rows': a newer build's rows may
                    # mean what this one cannot know, and row errors would hide that upgrading is the fix.
                    raise InvalidInput(f"this export is format version {version}, newer than this Keepmind "
                                       f"reads ({READS}): upgrade Keepmind to import it")
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
        written, skipped, erased = engine.write(importrows.write_rows, checked)
    except importrows.ImportRefused as exc:
        return ImportReport(errors=sorted(exc.errors, key=_line_number))
    kinds = memory_kinds([(kind, row) for _, kind, row in checked])  # as the export counted them
    imported, deleted, earlier = count_kinds(kinds, written)
    return ImportReport(imported=imported, skipped=count_kinds(kinds, skipped)[0], deleted=deleted, earlier=earlier,
                        erased=sum(count_kinds(kinds, erased)[:2]))


def _line_number(error: str) -> int:
    match = re.match(r"line (\d+):", error)
    return int(match.group(1)) if match else 0
