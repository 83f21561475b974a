"""Export and import from the browser: files to download, uploads to preview, then import.

The work itself is transfer.py's (`transfer.export`, `transfer.import_path`); this module only
packs and unpacks files around it, so a change to how a format is read or written applies here
as it does to the CLI:
- an export is a JSON Lines file, or the Markdown folder zipped;
- an upload (a .jsonl export, a MEMORY.md, or a zip of an OpenClaw-style folder or of an
  export) is staged in a private folder of the data dir, a zip unpacked only when every member
  stays inside it, is a plain file, and the whole stays under a size limit;
- the preview runs the very import, inside a transaction that is rolled back (`DryRun`): what it
  shows is what importing would do, counted by the same code, and nothing is kept;
- once imported, the upload's files go and what the import did is kept in their place for the
  rest of the hour (`finish`): the result page is a GET that reads it, and posting the same import
  again says it was imported already instead of that the upload is gone.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
import zipfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from . import mdimport, transfer
from .db import rows, scalar
from .errors import InvalidInput, NotFound
from .policy import AUDIENCES, check_name
from .private import copy_limited, make_private_dir, open_private, write_private

STAGING = transfer.STAGING
META = "meta.json"
STAGE_TTL_S = 3600
MAX_MEMBERS = transfer.MAX_MEMBERS
PREVIEW_ITEMS = 50


# -- export ---------------------------------------------------------------------------------------


def export_file(engine, folder: Path, fmt: str) -> tuple[Path, str]:
    """Write an export into `folder`: (the file to send, its download name)."""
    stamp = time.strftime("%Y-%m-%d", time.localtime(engine.now() / 1000))
    if fmt == "jsonl":
        path = Path(folder) / f"keepmind-export-{stamp}.jsonl"
        transfer.export(engine, path, fmt="jsonl")
        return path, path.name
    if fmt == "markdown":
        pages = Path(folder) / "markdown"
        transfer.export(engine, pages, fmt="markdown")
        target = Path(folder) / f"keepmind-markdown-{stamp}.zip"
        with open_private(target, "wb") as out, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for page in sorted(pages.rglob("*.md")):
                zf.write(page, page.relative_to(pages).as_posix())
        return target, target.name
    raise InvalidInput(f"unknown export format {fmt!r}: choose JSON Lines or Markdown")


# -- staging an upload ----------------------------------------------------------------------------


def _root(home: Path) -> Path:
    return make_private_dir(Path(home) / STAGING)


def _clean_old(home: Path, now_s: float) -> None:
    for child in _root(home).iterdir():
        try:
            if now_s - child.stat().st_mtime > STAGE_TTL_S:
                shutil.rmtree(child, ignore_errors=True)
        except OSError:
            pass


# The checks are transfer's, so `keepmind import FILE.zip` unpacks a zip as an upload is unpacked.
_unzip = transfer.unzip
_import_target = transfer.import_target


def stage(home: Path, filename: str, stream: BinaryIO, limit: int, now_s: float | None = None) -> str:
    """Stage one uploaded file for preview and import; its staging id."""
    _clean_old(home, time.time() if now_s is None else now_s)
    name = PurePosixPath((filename or "").replace("\\", "/")).name.strip()
    if not name or name.startswith("."):
        raise InvalidInput("choose a file to import: a .jsonl export, a MEMORY.md, or a .zip")
    if not name.lower().endswith((".jsonl", ".ndjson", ".md", ".zip")):
        raise InvalidInput(f"{name} is not something Keepmind imports: a .jsonl export, a .md file, or a .zip")
    staging_id = uuid.uuid4().hex
    folder = make_private_dir(_root(home) / staging_id)
    try:
        raw = folder / "upload" / name
        make_private_dir(raw.parent)
        with open_private(raw, "wb") as out:
            copy_limited(stream, out, limit, lambda: InvalidInput(
                f"{name} is larger than {limit:,} bytes (server.max_upload_bytes): nothing was imported"))
        content = make_private_dir(folder / "content")
        if name.lower().endswith(".zip"):
            _unzip(raw, content, limit, name)
        else:
            shutil.move(str(raw), content / name)
        write_private(folder / META, json.dumps({"name": name}))
        target = _import_target(content)  # refuse now what holds nothing to import
        if not name.lower().endswith(".zip"):
            transfer.refuse_empty(content / name, name)
        elif target.is_file():
            transfer.refuse_empty(target, f"{target.name} in {name}")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return staging_id


class AlreadyImported(InvalidInput):
    """The staged upload was imported already (its result is kept; the files are gone)."""

    status = 409


def _meta(home: Path, staging_id: str) -> dict:
    if not isinstance(staging_id, str) or len(staging_id) != 32 or not all(c in "0123456789abcdef" for c in staging_id):
        raise NotFound("no such upload: upload the file again")
    path = Path(home) / STAGING / staging_id / META
    if not path.is_file():
        raise NotFound("that upload is gone (uploads are kept for an hour): upload the file again")
    return json.loads(path.read_text(encoding="utf-8"))


def staged(home: Path, staging_id: str) -> tuple[Path, str]:
    """(what to import, the uploaded file's name) of a staged upload not imported yet."""
    meta = _meta(home, staging_id)
    if "result" in meta:
        raise AlreadyImported(f"{meta['name']} was imported already: importing it again adds nothing. To import "
                              "it once more, upload the file again")
    return _import_target(Path(home) / STAGING / staging_id / "content"), meta["name"]


def finish(home: Path, staging_id: str, report: dict, now_ms: int) -> dict:
    """After a successful import: the upload's files go, and what the import did stays in their
    place (as long as an upload would); the summary kept."""
    folder = Path(home) / STAGING / staging_id
    result = {**summary(report), "imported_at": now_ms}
    for child in ("upload", "content"):
        shutil.rmtree(folder / child, ignore_errors=True)
    write_private(folder / META, json.dumps({"name": report.get("name") or "", "result": result}))
    return result


def finished(home: Path, staging_id: str) -> dict | None:
    """What the import of this upload did; None while it is not imported (NotFound: it is gone)."""
    return _meta(home, staging_id).get("result")


# -- preview: the real import, rolled back ------------------------------------------------------


class _Rollback(Exception):
    def __init__(self, result, added):
        super().__init__("rolled back")
        self.result, self.added = result, added


# Every table an import writes (transfer.TABLES), to tell whether it would write anything at all.
WRITTEN = tuple(dict.fromkeys(table for table, _, _ in transfer.TABLES))
# The memories of the preview's list: what the import counts as imported (transfer.memory_kinds),
# not a deleted one kept for its tombstone, nor an earlier version of an edited record.
LIVE = (("memory_documents", "document_id", "m.deleted_at IS NULL"),
        ("memory_records", "record_id", "m.is_tombstone = 0 AND m.record_id NOT IN (SELECT"  # one pass, no index
                                        " supersedes_record_id FROM memory_records WHERE supersedes_record_id"
                                        " IS NOT NULL)"))
# What the rest of the store shows of the graph and of deletions: active anchors (not one merged
# away), edges that hold now (not one a merge closed), and tombstones that stand (the Deleted list).
SHOWN = (("anchors", "memory_anchors", "status = 'active'"), ("edges", "memory_edges", "valid_to IS NULL"),
         ("tombstones", "tombstones", "lifted_at IS NULL"))


def _nothing_added() -> dict:
    return {"items": [], "documents": 0, "records": 0, "anchors": 0, "edges": 0, "tombstones": 0, "rows": 0}


def _added(conn, before: dict) -> dict:
    """What a write added, read inside its own transaction, counted as the rest of the store counts
    it: the memories it lists, anchors, edges and deletions as their pages show them, and `rows`,
    every row written (0: importing it would change nothing)."""
    out = _nothing_added()
    for table, key, live in LIVE:
        kind = "documents" if table == "memory_documents" else "records"
        out[kind] = scalar(conn, f"SELECT COUNT(*) FROM {table} m WHERE m.rowid > ? AND {live}", (before[table],))
        left = PREVIEW_ITEMS - len(out["items"])
        if left > 0:
            out["items"] += rows(conn, f"SELECT m.{key} AS id, m.title, m.body, m.memory_class, m.audience,"
                                       f" m.boundary, m.source FROM {table} m WHERE m.rowid > ? AND {live}"
                                       " ORDER BY m.rowid LIMIT ?", (before[table], left))
    for kind, table, shown in SHOWN:
        out[kind] = scalar(conn, f"SELECT COUNT(*) FROM {table} WHERE rowid > ? AND {shown}", (before[table],))
    out["rows"] = sum(scalar(conn, f"SELECT COUNT(*) FROM {t} WHERE rowid > ?", (before[t],)) for t in WRITTEN)
    return out


class DryRun:
    """Stands in for the Engine during an import: every write runs and is rolled back, and what it
    added is read before the rollback. Everything else is the real engine's."""

    def __init__(self, engine):
        self._engine = engine
        self.added = _nothing_added()

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def write(self, fn, *args, **kwargs):
        def trial(conn):
            before = {t: scalar(conn, f"SELECT COALESCE(MAX(rowid), 0) FROM {t}") for t in WRITTEN}
            result = fn(conn, *args, **kwargs)
            raise _Rollback(result, _added(conn, before))

        try:
            self._engine.write(trial)
        except _Rollback as done:
            for key, value in done.added.items():
                self.added[key] = self.added[key] + value
            self.added["items"] = self.added["items"][:PREVIEW_ITEMS]
            return done.result
        raise AssertionError("unreachable: a dry run always rolls back")

    def notify_written(self, ids) -> None:
        return None


def _is_markdown(target: Path) -> bool:
    """The rule transfer.import_path applies: an export file is JSON Lines, anything else Markdown."""
    return not (target.is_file() and target.suffix in (".jsonl", ".json", ".ndjson"))


# How long an import waits for the units another curation worker took (a running Keepmind's own
# worker may lease some while the request curates the rest) before it says they are still curating.
CURATION_WAIT_S = 10.0


def _curated(engine, where: dict[str, str]) -> dict:
    """What curation made of the queued units, curated now on this thread; waits up to
    CURATION_WAIT_S for those another worker holds."""
    deadline = time.monotonic() + CURATION_WAIT_S
    engine.drain_checkpoints()
    done = engine.import_outcome(where)
    while not done["done"] and time.monotonic() < deadline:
        time.sleep(0.2)
        engine.drain_checkpoints()  # one whose lease was given back
        done = engine.import_outcome(where)
    return done


def markdown_import(engine, target: Path, *, audience: str, boundary: str, dry_run: bool) -> dict:
    """OpenClaw-style Markdown: the preview lists the units that would be queued (nothing is
    written); the import queues them and curates them now, as a person waits for the answer.

    A Markdown unit becomes a memory without an anchor or a relation (mdimport makes it so), so
    the preview counts no anchors and no edges; the page says so rather than show zeros."""
    if audience not in AUDIENCES or audience == "public":
        raise InvalidInput(f"a Markdown import needs a personal or team audience, not {audience!r}")
    # Keepmind's own Markdown export puts each memory back in the scope it names, as a JSON Lines
    # export does (the form's scope is for other Markdown): a re-import of this page's export had
    # copied a team/work and a personal/work memory into personal/default
    if dry_run:
        boundary = check_name(boundary)
        plan = mdimport.plan_markdown(target, audience=audience, boundary=boundary, own_scopes=True)
        fresh, skipped, wrong = _not_here_yet(engine, [(p, scope) for _, p, _, scope in plan.planned])
        items = [{"title": p.title, "body": p.content, "memory_class": p.memory_class, "audience": scope[0],
                  "boundary": scope[1]} for p, scope in fresh]
        return {"format": "markdown", "errors": plan.errors, "skipped": skipped, "deleted_here": wrong,
                "not_memories": plan.not_memories,
                "preview": {"items": items[:PREVIEW_ITEMS], "memories": len(items), "documents": len(items),
                            "records": 0, "carried": "", "anchors": 0,
                            "edges": 0, "tombstones": 0, "nothing": not items}}
    # transfer's, not the engine's import_path: that one wakes the curation worker, which would
    # race this request for the units it is about to curate.
    report = transfer.import_path(engine, target, audience=audience, boundary=boundary, as_exported=True)
    if report.get("errors") or not report.get("checkpoints"):
        return {**report, "imported": 0, "skipped": 0}
    done = _curated(engine, report["checkpoints"])
    return {**report, "outcome": done, **_tally(done)}


def _not_here_yet(engine, planned: list) -> tuple[list, int, int]:
    """The units curation's rules would keep (without a model: the same text, a text a memory of this
    scope already says, a claim deleted as wrong, or a unit said twice in the file are skipped), how
    many are skipped as already here, and how many as deleted here as wrong: so the preview counts
    as the result will (it showed 15 for a re-import whose result was 2, and 13 already here; a
    claim deleted as wrong was counted "already here", which it is not)."""
    from types import SimpleNamespace

    from . import store
    from .writepath import similarity

    now = engine.now()
    fresh, seen, wrong = [], set(), 0
    with engine.db.snapshot() as conn:
        for p, (audience, boundary) in planned:
            scope = SimpleNamespace(audience=audience, boundary=boundary)
            key = (store.fingerprint(p.content), audience, boundary)
            if key in seen:
                continue
            here = (store.find_fingerprint(conn, p.content, audience, boundary)
                    or (p.memory_class == "durable_fact" and similarity.already_said(conn, scope, p.content, now)))
            if not here and store.is_tombstoned(conn, p.content, audience, boundary):
                wrong += 1
                continue
            if here:
                continue
            seen.add(key)
            fresh.append((p, (audience, boundary)))
    return fresh, len(planned) - len(fresh) - wrong, wrong


def _tally(outcome: dict) -> dict:
    """A Markdown import's outcome as the result counts it: imported (kept, or merged into a memory
    here), still waiting for curation, failed, and why the others were not imported."""
    counts = outcome["counts"]
    return {"imported": counts["kept"] + counts["merged"], "merged": counts["merged"], "waiting": counts["waiting"],
            "failed": counts["failed"], "skipped": counts["skipped"] + counts["blocked"],
            "not_imported": dict(sorted(outcome["skipped_reasons"].items(), key=lambda kv: -kv[1])),
            "examples": outcome["examples"][:10]}


def summary(report: dict) -> dict:
    """What an import did, in the counts its result page shows (both formats)."""
    if report.get("format") == "markdown" and "outcome" in report:
        tally = {**_tally(report["outcome"]), "deleted": 0, "earlier": 0}
    else:  # memories counted as the export counted them; the deleted and earlier versions apart
        skipped, erased = int(report.get("skipped") or 0), int(report.get("erased") or 0)
        not_imported = {k: n for k, n in (("already here", skipped), ("erased for good here", erased)) if n}
        tally = {"imported": int(report.get("imported") or 0), "merged": 0, "waiting": 0, "failed": 0,
                 "skipped": skipped + erased, "not_imported": not_imported, "examples": [],
                 "deleted": int(report.get("deleted") or 0), "earlier": int(report.get("earlier") or 0)}
    return {"name": report.get("name") or "", "format": report.get("format") or "jsonl", **tally,
            "carried": transfer.carried_said(tally["deleted"], tally["earlier"])}


def run_import(engine, target: Path, *, audience: str, boundary: str, dry_run: bool) -> dict:
    """transfer.import_path on the staged upload; with `dry_run`, rolled back, plus what it would add."""
    if _is_markdown(target):
        return markdown_import(engine, target, audience=audience, boundary=boundary, dry_run=dry_run)
    if not dry_run:
        return transfer.import_path(engine, target, audience=audience, boundary=boundary)
    trial = DryRun(engine)
    report = transfer.import_path(trial, target, audience=audience, boundary=boundary)
    # The memories as the import's own report counts them (its result page says the same), and
    # what travels with them in the words export and import print.
    imported, deleted, earlier = (int(report.get(k) or 0) for k in ("imported", "deleted", "earlier"))
    return {**report, "preview": {**trial.added, "memories": imported,
                                  "carried": transfer.carried_said(deleted, earlier),
                                  "nothing": trial.added["rows"] == 0}}


EXPORTS = "exports"


def scratch_dir(home: Path, now_s: float | None = None) -> Path:
    """A private folder in the data dir for an export on its way to the browser (removed by
    `drop_scratch` once sent; one a crash left behind goes at the next export)."""
    root = make_private_dir(Path(home) / EXPORTS)
    now_s = time.time() if now_s is None else now_s
    for child in root.iterdir():
        try:
            if now_s - child.stat().st_mtime > STAGE_TTL_S:
                shutil.rmtree(child, ignore_errors=True)
        except OSError:
            pass
    return make_private_dir(root / uuid.uuid4().hex)


def drop_scratch(home: Path, folder: Path) -> None:
    """Remove an export folder made by `scratch_dir` (nothing outside it)."""
    folder = Path(folder)
    if folder.parent == Path(home) / EXPORTS:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = ["AlreadyImported", "DryRun", "drop_scratch", "export_file", "finish", "finished", "run_import",
           "scratch_dir", "stage", "staged", "summary"]
