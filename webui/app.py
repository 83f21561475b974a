"""`create_app(engine, config=None)`: the Flask app serving the JSON API (and the HTML pages)."""

from __future__ import annotations

from flask import Flask

from keepmind.engine import Engine

from . import errors, security
from .api import api
from .context import EXTENSION


def create_app(engine: Engine, config: dict | None = None) -> Flask:
    """The WSGI app serving `engine`.

    `config` may set `port` (the port the server is bound to, for the Host allowlist; the server
    sets it again with `security.bind_port` once the socket is bound) and `max_body_bytes`
    (defaults to the engine's `server.max_body_bytes` setting). Other keys go into app.config.
    """
    config = dict(config or {})
    app = Flask("keepmind.webui")
    app.config["MAX_CONTENT_LENGTH"] = int(config.pop("max_body_bytes", engine.settings["server.max_body_bytes"]))
    app.json.sort_keys = False  # keep "ok" first, as written
    security.bind_port(app, config.pop("port", engine.settings["server.port"]))
    app.config.update(config)
    app.extensions[EXTENSION] = engine
    errors.install(app)
    security.install(app)

    # JSON API; HTML blueprints register beside it, never under /api.
    app.register_blueprint(api)
    return app
