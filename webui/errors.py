"""How the server answers with an error: the JSON envelope under /api, an HTML page elsewhere.

Under `/api`: `{"ok": false, "error": "what went wrong and what to do", "status": N}` for
EngineError (its `status`), every werkzeug HTTPException (404, 405, 413, ...) and anything
unexpected (500, logged, never with a stack trace in the body). Everywhere else (the pages a
person opens) the same message in an HTML page, escaped like every other text.
"""

from __future__ import annotations

import logging

from flask import Flask, jsonify, make_response, render_template, request
from werkzeug.exceptions import HTTPException

from keepmind.engine.errors import EngineError

log = logging.getLogger("keepmind.api")

API_MESSAGES = {
    400: "the request could not be read: send a JSON object body",
    401: "missing or invalid API token: send `Authorization: Bearer <token>` (`keepmind token show` prints it)",
    403: "this request is not allowed",
    404: "no such route: {route} (GET /api/v1/openapi.json, with the token, lists the routes)",
    405: "this route does not accept that method: the Allow header names the ones it does, and GET "
         "/api/v1/openapi.json (with the token) lists each route's methods",
    413: "the request body is too large (server.max_body_bytes in keepmind.json sets the limit)",
    415: "send the body as JSON (Content-Type: application/json)",
}


PAGE_MESSAGES = {
    400: "the request could not be read",
    401: "sign in first: `keepmind open` opens Keepmind in your browser, signed in",
    403: "this request is not allowed",
    404: "there is no page here",
    405: "this page does not accept that method",
    413: "what you sent is too large (server.max_body_bytes in keepmind.json sets the limit)",
    415: "that kind of content cannot be sent here",
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


# What the page's heading says, in words (the status code stays the response's).
HEADINGS = {400: "That cannot be done", 401: "Sign in first", 403: "Not with this sign-in", 404: "Not found",
            405: "Not this way", 409: "Not now", 413: "Too large", 415: "Not a kind of file this takes",
            422: "That cannot be done", 429: "Too many at once", 500: "Something went wrong",
            503: "Not ready yet", 507: "Out of room"}


def page(message: str, status: int):
    """The HTML error page (never a stack trace; the message is escaped by the template); for an
    htmx request, just the message, which static/app.js shows in the page's status line."""
    template = "_error.html" if request.headers.get("HX-Request") == "true" else "error.html"
    response = make_response(render_template(template, message=message, status=status,
                                             heading=HEADINGS.get(status, "Something went wrong")), status)
    response.headers["Vary"] = "HX-Request"
    return response


def is_api() -> bool:
    return request.path == "/api" or request.path.startswith("/api/")


def answer(message: str, status: int):
    return envelope(message, status) if is_api() else page(message, status)


def install(app: Flask) -> None:
    """Register the handlers that turn every failure into the envelope (API) or a page (UI)."""

    @app.errorhandler(EngineError)
    def engine_error(exc: EngineError):
        status = exc.status if isinstance(exc.status, int) and 400 <= exc.status <= 599 else 400
        return answer(exc.message, status)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        status = exc.code or 500
        messages = API_MESSAGES if is_api() else PAGE_MESSAGES
        message = messages.get(status) or (exc.description or exc.name or "request failed")
        if "{route}" in message:  # the route asked for, named (it read as if openapi.json were missing)
            path = request.path if len(request.path) <= 200 else request.path[:200] + "…"
            message = message.format(route=f"{request.method} {path}")
        response = answer(message, status)
        if status == 405 and getattr(exc, "valid_methods", None):
            response.headers["Allow"] = ", ".join(exc.valid_methods)
        return response

    @app.errorhandler(Exception)
    def unexpected(exc: Exception):
        log.exception("unexpected_error path=%s", request.path)
        return answer("internal error in Keepmind; the server log has the details", 500)
