"""`create_app(engine, config=None)`: the Flask app serving the JSON API (and the HTML pages)."""

from __future__ import annotations

import secrets

from flask import Flask

from keepmind.engine import Engine

from . import errors, pages, security
from .api import api
from .context import EXTENSION


def create_app(engine: Engine, config: dict | None = None) -> Flask:
    """The WSGI app serving `engine`.

    `config` may set `port` (the port the server is bound to, for the Host allowlist; the server
    sets it again with `security.bind_port` once the socket is bound), `max_body_bytes` and
    `max_upload_bytes` (default: the engine's `server.max_body_bytes` and, for the pages that take
    files, `server.max_upload_bytes`) and `signin_clock` (the monotonic clock sign-in codes and
    browser sessions expire by; tests pass a fake) and `local_token_id` (the token whose secret is in
    <home>/token, which Keepmind's own clients use: neither the API nor the pages revoke it). Other
    keys go into app.config, among them `KEEPMIND_SHUTDOWN`: a callable that asks the process to
    stop (the host sets it; the UI's Quit calls it).
    """
    config = dict(config or {})
    app = Flask("keepmind.webui")
    app.config["MAX_CONTENT_LENGTH"] = int(config.pop("max_body_bytes", engine.settings["server.max_body_bytes"]))
    app.config["KEEPMIND_MAX_UPLOAD"] = int(config.pop("max_upload_bytes", engine.settings["server.max_upload_bytes"]))
    app.json.sort_keys = False  # keep "ok" first, as written
    security.bind_port(app, config.pop("port", engine.settings["server.port"]))
    signin_clock = config.pop("signin_clock", None)
    app.config["KEEPMIND_LOCAL_TOKEN_ID"] = config.pop("local_token_id", None)
    app.config["KEEPMIND_PAGE_KEY"] = secrets.token_bytes(32)  # signs the login form's CSRF; dies with the process
    app.config.update(config)
    app.extensions[EXTENSION] = engine
    errors.install(app)
    security.install(app, signin_clock)

    # JSON API; the HTML pages' blueprints beside it, never under /api.
    app.register_blueprint(api)
    pages.install(app)
    return app
