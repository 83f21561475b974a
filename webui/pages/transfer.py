"""Export and import (`/transfer`): download everything as JSON Lines or a Markdown zip; upload a
Keepmind export, a MEMORY.md, or a zip of an OpenClaw-style memory folder, see what would be
imported (the import itself, run and rolled back), then import it."""

from __future__ import annotations

from flask import Blueprint, request, send_file

from keepmind.engine import AUDIENCES, EngineError

from ..context import engine
from ..security import require_owner, upload
from .render import page

bp = Blueprint("transfer", __name__)
FORMATS = {"jsonl": "JSON Lines (everything, lossless: for another Keepmind)",
           "markdown": "Markdown, one file per anchor, zipped (for reading)"}


@bp.before_request
def owners_only():
    require_owner()


def _context(**extra) -> dict:
    return {"formats": FORMATS, "audiences": [a for a in AUDIENCES if a != "public"], "preview": None,
            "staging": None, "result": None, "error": None, "form": {"audience": "personal", "boundary": "default"},
            **extra}


@bp.get("/transfer")
def transfer():
    return page("transfer.html", **_context())


@bp.post("/transfer/export")
def export():
    """A POST (behind CSRF): an export holds every memory, so no other site may start one."""
    eng = engine()
    fmt = request.form.get("format") or "jsonl"
    scratch = eng.export_folder()
    try:
        path, name = eng.export_file(scratch, fmt)
        response = send_file(path, as_attachment=True, download_name=name,
                             mimetype="application/zip" if name.endswith(".zip") else "application/x-ndjson")
    except BaseException:
        eng.drop_export(scratch)
        raise
    response.call_on_close(lambda: eng.drop_export(scratch))  # once the file has been sent
    return response


def _import_form() -> dict:
    return {"audience": request.form.get("audience") or "personal",
            "boundary": (request.form.get("boundary") or "default").strip()}


@bp.post("/transfer/preview")
@upload
def preview():
    """Stage the upload and show what importing it would do (nothing is kept yet)."""
    eng, form = engine(), _import_form()
    upload_file = request.files.get("file")
    try:
        if upload_file is None or not upload_file.filename:
            raise EngineError("choose a file to import: a .jsonl export, a MEMORY.md, or a .zip")
        staging = eng.stage_import(upload_file.filename, upload_file.stream)
        found = eng.import_staged(staging, audience=form["audience"], boundary=form["boundary"], dry_run=True)
    except EngineError as exc:
        return page("transfer.html", http_status=422, **_context(error=exc.message, form=form))
    return page("transfer.html", **_context(preview=found, staging=staging, form=form))


@bp.post("/transfer/import/<staging>")
def run_import(staging: str):
    eng, form = engine(), _import_form()
    try:
        result = eng.import_staged(staging, audience=form["audience"], boundary=form["boundary"], dry_run=False)
    except EngineError as exc:
        return page("transfer.html", http_status=422, **_context(error=exc.message, form=form))
    status = 422 if result.get("errors") else 200
    return page("transfer.html", http_status=status, **_context(result=result, form=form,
                                                                 staging=staging if result.get("errors") else None))
