"""The write path as a person sees it: the checkpoint backlog (`/checkpoints`: what waits, what
curation holds, what failed or died, with retry and discard; the list refreshes itself while
work is in flight) and review before keeping (`/review`: keep, edit then keep, or reject each
observed proposal, with keyboard shortcuts)."""

from __future__ import annotations

from flask import Blueprint, request

from keepmind.engine import EngineError
from keepmind.engine.wording import outcome_words

from ..context import engine
from ..security import viewer_token
from .render import confirm, confirmed, done, is_htmx, page

bp = Blueprint("backlog", __name__)
SECTION_TITLES = {
    "leased": "Being curated", "failed": "Failed, will try again", "pending": "Waiting",
    "dead": "Dead letters", "review": "Waiting for review", "completed": "Recently completed",
    "discarded": "Discarded",
}
SHOWN = 25


def _backlog(message: str | None = None, error: str | None = None, status: int = 200, retried: str | None = None):
    found = engine().backlog(token=viewer_token(), limit=SHOWN)
    if retried:
        message = _retry_news(found, retried) or message
    return page("checkpoints.html", "_checkpoints.html", http_status=status, backlog=found, titles=SECTION_TITLES,
                shown=SHOWN, message=message, error=error, retried=retried)


def _retry_news(found: dict, checkpoint_id: str) -> str | None:
    """What became of a retried checkpoint, for the notice the list keeps while it refreshes itself:
    a person who pressed Retry saw "Sent back" vanish at the next refresh, and could not tell a
    second failure from the first (the row only moved between sections)."""
    for name, rows in found["sections"].items():
        row = next((r for r in rows if r["checkpoint_id"] == checkpoint_id), None)
        if row is None:
            continue
        what = f" “{row['title']}”" if row.get("title") else ""  # "Retried The proposal" read mid-sentence
        if name in ("pending", "leased"):
            return f"Retrying{what}: curation is at work on it."
        if name == "failed":
            return f"Retried{what}: it failed again ({row['last_error']}); it is tried again later."
        if name == "dead":
            return f"Retried{what}: it failed again and is a dead letter ({row['last_error']})."
        if name == "completed":
            return f"Retried{what}: {outcome_words(row.get('reason'))}."
        return None
    return None


@bp.get("/checkpoints")
def checkpoints():
    retried = request.args.get("retried", "")
    return _backlog(retried=retried if retried.startswith("cp") and len(retried) <= 80 else None)


def _act(checkpoint_id: str, action: str):
    """Retry or discard, then the list again (htmx swaps it in place; a plain form goes back)."""
    try:
        if action == "retry":
            engine().retry_checkpoint(checkpoint_id, token=viewer_token())
            message = "Sent back to curation: it is tried now."
        else:
            engine().discard_checkpoint(checkpoint_id, token=viewer_token())
            message = "Discarded: it will not be curated (the record of it stays)."
    except EngineError as exc:
        if not is_htmx():
            raise
        return _backlog(error=exc.message, status=422)
    if not is_htmx():
        return done("/checkpoints")
    return _backlog(message=message, retried=checkpoint_id if action == "retry" else None)


@bp.post("/checkpoints/<checkpoint_id>/retry")
def retry(checkpoint_id: str):
    return _act(checkpoint_id, "retry")


@bp.post("/checkpoints/<checkpoint_id>/discard")
def discard(checkpoint_id: str):
    if not confirmed():
        found = engine().backlog(token=viewer_token(), limit=SHOWN)
        title = next((r.get("title") for rows in found["sections"].values() for r in rows
                      if r["checkpoint_id"] == checkpoint_id), None)
        return confirm(f"Discard “{title}”?" if title else "Discard this proposal?",
                       "It will not be curated: what it says is not remembered, and "
                       "a discarded proposal cannot be brought back.",
                       action_url=f"/checkpoints/{checkpoint_id}/discard", button="Discard",
                       back_url="/checkpoints", target="#backlog", swap="outerHTML")
    return _act(checkpoint_id, "discard")


# -- review before keeping --------------------------------------------------------------------------


def _queue(message: str | None = None, error: str | None = None, editing: str | None = None,
           form: dict | None = None, status: int = 200):
    eng = engine()
    return page("review.html", "_review_queue.html", http_status=status,
                queue=eng.review_queue(token=viewer_token()), review_on=bool(eng.settings["memory.curation.review"]),
                message=message, error=error, editing=editing, form=form or {}, badge_oob=is_htmx())


@bp.get("/review")
def review():
    return _queue(editing=request.args.get("edit"))


@bp.get("/review/<checkpoint_id>/edit")
def edit(checkpoint_id: str):
    return _queue(editing=checkpoint_id)


@bp.post("/review/<checkpoint_id>/keep")
def keep(checkpoint_id: str):
    title, content = request.form.get("title"), request.form.get("content")
    try:
        kept = engine().keep_proposal(checkpoint_id, title=title, content=content, token=viewer_token())
    except EngineError as exc:
        return _queue(error=exc.message, editing=checkpoint_id if content is not None else None,
                      form={"title": title, "content": content}, status=422)
    when = ("it becomes a memory when memory is resumed (nothing new is kept while paused)" if engine().paused
            else "curation forms the memory now")
    message = f"Kept as edited: {when}." if kept["edited"] else f"Kept: {when}."
    return _queue(message=message) if is_htmx() else done("/review")


@bp.post("/review/<checkpoint_id>/reject")
def reject(checkpoint_id: str):
    try:
        engine().reject_proposal(checkpoint_id, token=viewer_token())
    except EngineError as exc:
        return _queue(error=exc.message, status=422)
    message = "Rejected: it will not be proposed again. It is listed under Deleted, where Restore brings it back."
    return _queue(message=message) if is_htmx() else done("/review")
