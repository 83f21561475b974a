"""The overview (`/`): health, counts, the checkpoint backlog, the last recalls and memories formed
(a recall's receipt is the receipts area's: receipts.py)."""

from __future__ import annotations

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
