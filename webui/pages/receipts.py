"""Recall receipts (`/receipts`): recent recalls, filtered by session, injected or not, degraded or
not; one receipt (`/receipts/<id>`): the message, the planned terms, every candidate's score at
each stage and what became of it, what was injected, timings, degradation; and a person's two
feedback labels ("don't inject this here", "this should have been recalled"), counted here and
used by `keepmind recall calibrate --feedback`."""

from __future__ import annotations

from datetime import datetime

from flask import Blueprint, redirect, request

from keepmind.engine import EngineError

from ..context import engine
from ..security import viewer_scope, viewer_token
from .render import done, is_htmx, page, page_int, text

bp = Blueprint("receipts", __name__)
PAGE_SIZE = 50
PICK_LIMIT = 8
YES_NO = {"yes": True, "no": False}


@bp.get("/receipts")
def receipts():
    eng, viewer = engine(), viewer_token()
    session_id = text(request.args.get("session"))
    injected = YES_NO.get(request.args.get("injected") or "")
    degraded = YES_NO.get(request.args.get("degraded") or "")
    before = request.args.get("before")
    before = page_int(before)
    found = eng.receipts(token=viewer, limit=PAGE_SIZE + 1, before=before, session_id=session_id, injected=injected,
                         degraded=degraded)
    args = {k: request.args.get(k) for k in ("session", "injected", "degraded") if request.args.get(k)}
    return page("receipts.html", "_receipt_rows.html", receipts=found[:PAGE_SIZE],
                next_before=found[PAGE_SIZE - 1]["created_at"] if len(found) > PAGE_SIZE else None, before=before,
                args=args, sessions=eng.sessions(token=viewer, limit=50), feedback=eng.feedback_counts(token=viewer))


def _receipt_context(receipt_id: str, **extra) -> dict:
    eng, viewer = engine(), viewer_token()
    view = eng.receipt_view(receipt_id, token=viewer)
    receipt = view["receipt"]
    labels = {(lb["item_id"], lb["label"]) for lb in view["labels"]}
    titles = {s["id"]: s["title"] for s in view["stages"]}
    titles.update({i.get("id"): i.get("title") for i in receipt.get("injected") or []})
    # a memory marked "should have been recalled" was, by its nature, seldom among them: by its title
    # too, not its id (a walk saw "doc-fd3a…" after marking one)
    unnamed = [lb["item_id"] for lb in view["labels"] if not titles.get(lb["item_id"])]
    if unnamed:
        try:
            titles.update({m.id: m.title for m in eng.get(viewer_scope(), unnamed).items})
        except EngineError:
            pass
    session = None
    if receipt.get("session_id"):
        try:
            session = eng.session(receipt["session_id"], token=viewer)
        except EngineError:
            session = None
    try:
        at = int(datetime.fromisoformat(str(receipt.get("created_at")).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        at = None
    return {"receipt": receipt, "at": at, "stages": view["stages"], "timings": view["timings"], "labels": labels,
            "label_rows": view["labels"], "titles": titles, "session": session, "picked": None, "q": "",
            "message": None, "pick_error": None, **extra}


@bp.get("/receipts/<receipt_id>")
def receipt(receipt_id: str):
    return page("receipt.html", **_receipt_context(receipt_id))


@bp.get("/recalls/<receipt_id>")
def old_address(receipt_id: str):
    """Part 1's address of a receipt."""
    return redirect(f"/receipts/{receipt_id}", 308)


@bp.get("/receipts/<receipt_id>/pick")
def pick(receipt_id: str):
    """Memories this recall's session could have recalled, matching `q` (to say which one it should have)."""
    eng = engine()
    context = _receipt_context(receipt_id)
    q = (request.args.get("q") or "").strip()
    if not q:  # an empty search matched nothing and said so about “”: ask for words instead
        context.update(pick_error="Type a few words of the memory that should have been recalled, then Find.")
        return page("receipt.html", "_receipt_feedback.html", http_status=422, **context)
    picked = []
    if context["session"] is not None:
        scope = eng.scope(context["session"]["session_id"], token=viewer_token())
        picked = eng.search_memories(scope, q, limit=PICK_LIMIT)
    context.update(picked=picked, q=q)
    return page("receipt.html", "_receipt_feedback.html", **context)


@bp.post("/receipts/<receipt_id>/feedback")
def feedback(receipt_id: str):
    label = request.form.get("label") or ""
    memory_id = request.form.get("memory_id") or ""
    remove = request.form.get("remove") == "yes"
    engine().label_recall(receipt_id, memory_id, label, token=viewer_token(), remove=remove)
    if not is_htmx():
        return done(f"/receipts/{receipt_id}#feedback")
    message = ("Label taken back." if remove
               else "Label kept: `keepmind recall calibrate --feedback` will learn from it.")
    return page("receipt.html", "_receipt_feedback.html", **_receipt_context(receipt_id, message=message))
