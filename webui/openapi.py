"""The OpenAPI 3.1 document of /api/v1: `document(operations, version)`, a function of the route
declarations it is given (api.py passes its registry's).

Served at /api/v1/openapi.json (the `openapi_json` route in api.py, behind the bearer token like
every /api route). A test checks that its paths and methods are exactly the registered routes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from . import schemas
from .registry import PREFIX, Operation

# Every operation can answer these; all of them carry the one error envelope.
ERROR_STATUSES = {
    "400": "Bad input: the message says what to fix",
    "401": "Missing, invalid or revoked bearer token",
    "403": "Refused: foreign Host, cross-site request, or beyond the token's ceiling or boundaries",
    "404": "No such session, memory, token or route",
    "405": "Method not allowed on this route",
    "409": "Memory is turned off (memory.enabled = false)",
    "413": "Body larger than server.max_body_bytes",
    "503": "The engine is closing (Keepmind is shutting down)",
}
PATH_PARAMS = {
    "session_id": ("A session id from POST /sessions", schemas.SESSION_ID),
    "token_id": ("A token id or name", schemas.TOKEN_REF),
    "receipt_id": ("A receipt id from a recall answer", schemas.RECEIPT_ID),
    "checkpoint_id": ("A checkpoint id from store_memory's answer", schemas.CHECKPOINT_ID),
    "tombstone_id": ("A tombstone id from GET /deleted", schemas.TOMBSTONE_ID),
}


def openapi_path(rule: str) -> str:
    return PREFIX + re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule)


def operation_doc(op: Operation) -> dict:
    doc = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [op.tag],
        "responses": {
            "200": {"description": "Success", "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{op.response}"}}}},
            **{code: {"description": text, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Error"}}}} for code, text in ERROR_STATUSES.items()},
        },
    }
    params = re.findall(r"<(?:[a-z]+:)?([a-z_]+)>", op.rule)
    if params:
        doc["parameters"] = [{"name": p, "in": "path", "required": True, "description": PATH_PARAMS[p][0],
                              "schema": PATH_PARAMS[p][1]} for p in params]
    if op.query:
        doc.setdefault("parameters", []).extend(
            {"name": name, "in": "query", "required": False, "description": schema.get("description", ""),
             "schema": schema} for name, schema in schemas.QUERIES[op.query].items())
    if op.public:
        doc["security"] = []  # no token: see the operation's summary
        doc["responses"].pop("401")
    if op.request:
        doc["requestBody"] = {"required": op.body_required, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{op.request}"}}}}
    return doc


def document(operations: Iterable[Operation], version: str) -> dict:
    paths: dict[str, dict] = {}
    for op in operations:
        paths.setdefault(openapi_path(op.rule), {})[op.method.lower()] = operation_doc(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Keepmind localhost API",
            "version": version,
            "description": "Long-term memory for LLM agents on 127.0.0.1. Every route needs "
                           "`Authorization: Bearer <token>` except POST /api/v1/hello, which lets a "
                           "client check that the server is the one its data dir's server.json names "
                           'before it sends a token; every error is `{"ok": false, "error": "...", "status": N}`.',
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {**schemas.REQUESTS, **schemas.RESPONSES},
        },
    }


__all__ = ["document", "openapi_path"]
