"""One error envelope for everything the server answers with an error.

`{"ok": false, "error": "what went wrong and what to do", "status": N}` for EngineError (its
`status`), every werkzeug HTTPException (404, 405, 413, ...) and anything unexpected (500, logged,
never with a stack trace in the body).
"""

from __future__ import annotations

import logging

from flask import Flask, jsonify
from werkzeug.exceptions import HTTPException

from keepmind.engine.errors import EngineError

log = logging.getLogger("keepmind.api")

MESSAGES = {
    400: "the request could not be read: send a JSON object body",
    401: "missing or invalid API token: send `Authorization: Bearer <token>` (`keepmind token show` prints it)",
    403: "this request is not allowed",
    404: "no such route: see /api/v1/openapi.json for the routes",
    405: "this route does not accept that method: see /api/v1/openapi.json",
    413: "the request body is too large (server.max_body_bytes in keepmind.json sets the limit)",
    415: "send the body as JSON (Content-Type: application/json)",
}


class Unauthorized(EngineError):
    status = 401


class Forbidden(EngineError):
    status = 403


def envelope(message: str, status: int):
    response = jsonify({"ok": False, "error": message, "status": status})
    response.status_code = status
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="keepmind"'
    return response


def install(app: Flask) -> None:
    """Register the handlers that turn every failure into the envelope."""

    @app.errorhandler(EngineError)
    def engine_error(exc: EngineError):
        status = exc.status if isinstance(exc.status, int) and 400 <= exc.status <= 599 else 400
        return envelope(exc.message, status)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        status = exc.code or 500
        message = MESSAGES.get(status) or (exc.description or exc.name or "request failed")
        response = envelope(message, status)
        if status == 405 and getattr(exc, "valid_methods", None):
            response.headers["Allow"] = ", ".join(exc.valid_methods)
        return response

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        log.exception("api_unexpected_error")
        return envelope("internal error in Keepmind; the server log has the details", 500)
