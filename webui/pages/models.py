"""Local models (`/models`): every known model with its state, role, size and calibration;
download from the hub (when auto-download is allowed), install the offline pack, import by upload
(verified against the manifests before anything is installed), switch the active embedder, verify
all. Long work runs as a job whose partial (`/jobs/<id>`) polls itself until the job ends."""

from __future__ import annotations

from flask import Blueprint, request

from keepmind.engine import EngineError

from ..context import engine
from ..errors import Forbidden
from ..security import require_owner, upload
from .render import done, is_htmx, page

bp = Blueprint("models", __name__)
JOBS_SHOWN_MS = 3_600_000  # a finished job's card stays on the page this long
JOB_KINDS = ("model-download", "model-import", "model-install-offline", "model-switch", "backfill")
MAX_FILES = 8


@bp.before_request
def owners_only():
    require_owner()


def _context(**extra) -> dict:
    eng = engine()
    details = eng.models.details()
    # what is running, and what ended in the last hour (its result is news; a day's old cards are not)
    recent = eng.now() - JOBS_SHOWN_MS
    jobs = shown_jobs(eng.jobs.list(), recent)
    return {"models": eng.model_catalog(fresh=extra.pop("fresh", False)), "details": details,
            "auto_download": bool(eng.settings["memory.embeddings.auto_download"]),
            "embeddings_on": bool(eng.settings["memory.embeddings.enabled"]), "jobs": jobs,
            "max_upload": eng.settings["server.max_upload_bytes"], "error": None, "message": None, **extra}


def shown_jobs(jobs, recent_ms: int, limit: int = 6) -> list:
    """The job cards (newest first): every running job, and one that ended in the last hour until
    another job starts after it. An earlier job's card is history then: a failed upload's card stayed
    under the download started after it, as if both were this answer (and three failed uploads in a
    row are one card, the latest, not a stack)."""
    shown, latest_start = [], None
    for job in jobs:  # newest first, in the order started: `latest_start` is of the jobs after this one
        if job.kind not in JOB_KINDS:
            continue
        if job.running or ((job.finished_at or 0) >= recent_ms
                           and (latest_start is None or latest_start < (job.finished_at or 0))):
            shown.append(job)
        latest_start = job.started_at if latest_start is None else max(latest_start, job.started_at)
    return shown[:limit]


@bp.get("/models")
def models():
    return page("models.html", "_models_table.html", **_context())


def _started(job):
    return done("/models") if not is_htmx() else page("models.html", "_models_table.html",
                                                      **_context(message=f"{job.label}: started."))


def _failed(exc: EngineError):
    """A refusal, alone: the cards of jobs that already ended (an earlier upload's failure) are left
    out, or they read as part of this answer; a job still running stays, it is news."""
    context = _context(error=exc.message)
    context["jobs"] = [job for job in context["jobs"] if job.running]
    return page("models.html", "_models_table.html", http_status=422, **context)


@bp.post("/models/<model_id>/download")
def download(model_id: str):
    eng = engine()
    if not eng.settings["memory.embeddings.auto_download"]:
        raise Forbidden("downloads are off (memory.embeddings.auto_download is false): install the offline pack "
                        "or upload the model's files instead")
    try:
        return _started(eng.download_model(model_id))
    except EngineError as exc:
        return _failed(exc)


@bp.post("/models/install-offline")
def install_offline():
    try:
        return _started(engine().install_offline_models())
    except EngineError as exc:
        return _failed(exc)


@bp.post("/models/upload")
@upload
def upload_files():
    files = [f for f in request.files.getlist("files") if f and f.filename][:MAX_FILES + 1]
    if len(files) > MAX_FILES:
        return _failed(EngineError(f"upload at most {MAX_FILES} files at once"))
    as_id = (request.form.get("as_id") or "").strip() or None
    try:
        job = engine().upload_models([(f.filename, f.stream) for f in files], as_id=as_id)
    except EngineError as exc:
        return _failed(exc)
    return _started(job)


@bp.post("/models/<model_id>/switch")
def switch(model_id: str):
    try:
        return _started(engine().switch_embedder(model_id))
    except EngineError as exc:
        return _failed(exc)


@bp.post("/models/verify")
def verify():
    context = _context(fresh=True)
    bad = [m["id"] for m in context["models"] if m["state"] == "corrupt"]
    context["message"] = ("Verified every installed file against its manifest: " +
                          (f"{', '.join(bad)} failed (see below)." if bad else "all good."))
    return page("models.html", "_models_table.html", **context)


@bp.get("/jobs/<job_id>")
def job(job_id: str):
    """A job's progress; while it runs, the partial asks again every second (then stops)."""
    found = engine().job(job_id)
    response = page("job.html", "_job.html", job=found)
    if not found.running and request.args.get("poll"):
        response.headers["HX-Trigger"] = "models-changed"  # the list below reloads with the new states
    return response
