"""The overview (`/`): health, counts, the checkpoint backlog, the last recalls and memories formed
(a recall's receipt is the receipts area's: receipts.py)."""

from __future__ import annotations

from flask import Blueprint

from keepmind.engine.clock import iso

from ..context import engine
from ..security import viewer_scope, viewer_token
from .render import page, today_start_ms, when

bp = Blueprint("overview", __name__)


@bp.get("/")
def overview():
    eng, token, scope = engine(), viewer_token(), viewer_scope()
    return page(
        "overview.html",
        status=readable(eng.status()),
        counts=eng.counts(scope, since=today_start_ms()),
        checkpoints=eng.checkpoint_overview(limit=1, token=token)["counts"],
        recalls=eng.receipts(token=token, limit=8),
        formed=eng.browse(scope, limit=8).items,
    )


def readable(status: dict) -> dict:
    """The status with its pause time as the page's other times read (2026-12-02 04:20, local), not
    the engine's UTC ISO stamp ("since 2026-12-02T04:20:23.725000Z")."""
    since = status.get("paused_since")
    if since is None:
        return status
    stamp = iso(since)
    return {**status, "reasons": [r.replace(stamp, when(since)) for r in status.get("reasons", [])]}
