"""The overview (`/`): health, counts, the checkpoint backlog, the last recalls and memories formed;
and one recall's receipt (`/recalls/<id>`): why it injected what it did."""

from __future__ import annotations

from datetime import datetime

from flask import Blueprint

from ..context import engine
from ..security import viewer_scope, viewer_token
from .render import page, today_start_ms

bp = Blueprint("overview", __name__)


@bp.get("/")
def overview():
    eng, token, scope = engine(), viewer_token(), viewer_scope()
    return page(
        "overview.html",
        status=eng.status(),
        counts=eng.counts(scope, since=today_start_ms()),
        checkpoints=eng.checkpoint_overview(limit=1, token=token)["counts"],
        recalls=eng.receipts(token=token, limit=8),
        formed=eng.browse(scope, limit=8).items,
    )


@bp.get("/recalls/<receipt_id>")
def recall(receipt_id: str):
    receipt = engine().explain(receipt_id, token=viewer_token())
    titles = {c.get("id"): c.get("title") for c in receipt.get("considered", [])}
    try:
        at = int(datetime.fromisoformat(str(receipt.get("created_at")).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        at = None
    return page("recall.html", receipt=receipt, titles=titles, at=at)
