"""The JSON API's route registry: `@route(...)` declares a view once, for Flask and for OpenAPI.

Each declaration registers the Flask view on the API blueprint and records an `Operation`
(method, rule, request, query and response schema names) that `openapi.document(operations)` publishes.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint

PREFIX = "/api/v1"


@dataclass(frozen=True)
class Operation:
    method: str
    rule: str  # Flask rule, e.g. /sessions/<session_id>/turns
    operation_id: str
    summary: str
    request: str | None  # a schemas.REQUESTS name
    response: str  # a schemas.RESPONSES name
    tag: str
    body_required: bool = True
    public: bool = False  # answered without a token (declared `security: []` in the document)
    query: str | None = None  # a schemas.QUERIES name: the query parameters it takes


class Registry:
    """A blueprint and the operations declared on it."""

    def __init__(self, name: str, import_name: str, url_prefix: str = PREFIX):
        self.blueprint = Blueprint(name, import_name, url_prefix=url_prefix)
        self.operations: list[Operation] = []

    def route(self, method: str, rule: str, *, summary: str, response: str, request_schema: str | None = None,
              tag: str = "memory", body_required: bool = True, public: bool = False, query: str | None = None):
        """Declare a view; `public=True` lets it answer without a bearer token (security.py reads
        the view's `public` attribute), which only a route that reveals nothing may be."""
        def decorator(fn):
            self.operations.append(Operation(method, rule, fn.__name__, summary, request_schema, response, tag,
                                             body_required, public, query))
            fn.public = public
            self.blueprint.add_url_rule(rule, fn.__name__, fn, methods=[method])
            return fn
        return decorator


__all__ = ["Operation", "PREFIX", "Registry"]
