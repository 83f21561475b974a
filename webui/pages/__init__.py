"""The HTML pages a person opens, one blueprint per area, apart from the JSON API.

Views call the Engine facade and render templates (webui/templates/, partials named
`_thing.html`); they hold no SQL and no policy. A GET never writes: not a revision, not a
receipt, not a "last seen".
"""

from __future__ import annotations

from flask import Flask

from . import (
    anchors,
    auth,
    backlog,
    doctor,
    lifecycle,
    memories,
    memory,
    models,
    overview,
    receipts,
    render,
    scoping,
    settings,
    transfer,
)

BLUEPRINTS = (auth.bp, overview.bp, memories.bp, memory.bp, anchors.bp, lifecycle.bp, backlog.bp, scoping.bp,
              receipts.bp, models.bp, doctor.bp, settings.bp, transfer.bp)


def install(app: Flask) -> None:
    render.install(app)
    for bp in BLUEPRINTS:
        app.register_blueprint(bp)


__all__ = ["BLUEPRINTS", "install"]
