"""Export and import (`/transfer`): download everything as JSON Lines or a Markdown zip; upload a
Keepmind export (the .jsonl, or the Markdown zip downloaded here), a MEMORY.md, or a zip of an
OpenClaw-style memory folder, see what would be imported (the import itself, run and rolled back,
counted as its result will count it), then import it (no Import is offered when nothing would be).
Both posts answer with a redirect (post/redirect/get): the upload's to its preview, the import's to
its result, so reloading or going back never uploads or imports again."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Blueprint, request, send_file
from werkzeug.wsgi import ClosingIterator

from keepmind.engine import AUDIENCES, EngineError

from ..context import engine
from ..security import require_owner, upload
from .render import done, page

bp = Blueprint("transfer", __name__)
FORMATS = {"jsonl": "JSON Lines (everything, lossless: for another Keepmind)",
           "markdown": ("Markdown, one file per anchor, zipped (for reading: each memory as it stands now, "
                        "without its earlier versions)")}


@bp.before_request
def owners_only():
    require_owner()


def _context(**extra) -> dict:
    return {"formats": FORMATS, "audiences": [a for a in AUDIENCES if a != "public"], "preview": None,
            "staging": None, "result": None, "again": False, "error": None,
            "form": {"audience": "personal", "boundary": "default"},
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
    # The copy goes once it has been sent (or the download broke off). Not call_on_close: send_file
    # hands the server the file itself (direct passthrough), and Werkzeug then never calls it.
    response.response = ClosingIterator(response.response, [lambda: eng.drop_export(scratch)])
    return response


def _import_form(values=None) -> dict:
    values = request.form if values is None else values
    return {"audience": values.get("audience") or "personal",
            "boundary": (values.get("boundary") or "default").strip()}


@bp.post("/transfer/preview")
@upload
def preview():
    """Stage the upload (nothing is kept yet) and go to what importing it would do."""
    eng, form = engine(), _import_form()
    upload_file = request.files.get("file")
    try:
        if upload_file is None or not upload_file.filename:
            raise EngineError("choose a file to import: a .jsonl export, a MEMORY.md, or a .zip")
        staging = eng.stage_import(upload_file.filename, upload_file.stream)
    except EngineError as exc:
        return page("transfer.html", http_status=422, **_context(error=exc.message, form=form))
    return done(f"/transfer/preview/{staging}?{urlencode(form)}")


@bp.get("/transfer/preview/<staging>")
def staged_preview(staging: str):
    """What importing a staged upload would do: the import run and rolled back, so a GET that writes
    nothing (reloading it counts again against the store as it is now)."""
    eng, form = engine(), _import_form(request.args)
    try:
        if eng.import_result(staging) is not None:
            return done(f"/transfer/import/{staging}?again=1")
        found = eng.import_staged(staging, audience=form["audience"], boundary=form["boundary"], dry_run=True)
    except EngineError as exc:
        return page("transfer.html", http_status=exc.status if exc.status != 400 else 422,
                    **_context(error=exc.message, form=form))
    return page("transfer.html", **_context(preview=found, staging=staging, form=form))


@bp.post("/transfer/import/<staging>")
def run_import(staging: str):
    eng, form = engine(), _import_form()
    try:
        if eng.import_result(staging) is not None:  # imported already: its result says so, never twice
            return done(f"/transfer/import/{staging}?again=1")
        result = eng.import_staged(staging, audience=form["audience"], boundary=form["boundary"], dry_run=False)
    except EngineError as exc:
        return page("transfer.html", http_status=422, **_context(error=exc.message, form=form))
    if result.get("errors"):
        return page("transfer.html", http_status=422, **_context(result=result, form=form, staging=staging))
    return done(f"/transfer/import/{staging}")


@bp.get("/transfer/import/<staging>")
def import_result(staging: str):
    """What an import did: the page its POST redirects to (a GET, so Back and reload never import)."""
    try:
        result = engine().import_result(staging)
    except EngineError as exc:
        return page("transfer.html", http_status=exc.status, **_context(error=exc.message))
    if result is None:
        return page("transfer.html", http_status=404, **_context(
            error="this upload has not been imported: choose the file again below to see what importing it would do"))
    return page("transfer.html", **_context(result=result, again=request.args.get("again") == "1"))
