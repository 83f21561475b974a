"""JSON Schemas of the API's bodies, and the small validator the routes use.

The same dicts are the OpenAPI document's components and the routes' input checks, so the
document cannot promise a shape the server does not enforce. The validator covers the subset
used here: type (or a list of types), properties, required, additionalProperties, enum, pattern,
min/maxLength, minimum/maximum, items, min/maxItems, anyOf.
"""

from __future__ import annotations

import re

from keepmind.engine import MAX_TURN_CHARS
from keepmind.engine.errors import InvalidInput
from keepmind.engine.memory import MAX_BODY_CHARS, MAX_TITLE_CHARS

SESSION_ID = {"type": "string", "pattern": "^ses-[0-9a-f]{32}$"}
TOKEN_REF = {"type": "string", "minLength": 1, "maxLength": 100}
RECEIPT_ID = {"type": "string", "minLength": 1, "maxLength": 100}
CHECKPOINT_ID = {"type": "string", "minLength": 1, "maxLength": 100}
AUDIENCE = {"type": "string", "enum": ["personal", "team", "public"]}
BOUNDARY = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S",
            "x-message": "is blank: name a workspace or channel",
            "description": "A workspace or channel name: no control or invisible characters; '*' is reserved "
                           "(a token's wildcard)"}
SHORT_TEXT = {"type": "string", "maxLength": 500}
STRINGS = {"type": "array", "items": {"type": "string", "maxLength": 500}, "maxItems": 200}
TOMBSTONE_ID = {"type": "string", "pattern": "^tomb-[0-9a-f]{32}$",
                "description": "What a deletion as wrong left: GET /deleted lists them"}
MEMORY_ID = {"type": "string", "pattern": "^\\s*(doc|rec)-[0-9a-f]{32}\\s*$",
             "x-message": "is not a memory id: ids look like doc-<32 hex digits> or rec-<32 hex digits>; "
                          "copy them verbatim from find results"}


def obj(properties: dict, required: tuple[str, ...] = ()) -> dict:
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


REQUESTS = {
    "SessionOpen": obj({"audience": AUDIENCE, "boundary": BOUNDARY, "channel": {**SHORT_TEXT, "maxLength": 200},
                        "title": SHORT_TEXT}, ("audience", "boundary")),
    "Turn": obj({"user": {"type": "string", "maxLength": MAX_TURN_CHARS},
                 "assistant": {"type": "string", "maxLength": MAX_TURN_CHARS},
                 "tools": STRINGS, "recalled_ids": STRINGS, "skills": STRINGS}),
    "Empty": obj({}),
    "Compaction": obj({"summary": {"type": "string", "minLength": 1, "maxLength": MAX_BODY_CHARS}},
                      ("summary",)),
    "Findings": obj({"findings": {
        "type": "array", "minItems": 1, "maxItems": 50,
        "items": {"anyOf": [
            {"type": "string", "minLength": 1, "maxLength": MAX_BODY_CHARS},
            {"type": "object", "properties": {
                "title": {"type": "string", "maxLength": MAX_TITLE_CHARS},
                "content": {"type": "string", "minLength": 1, "maxLength": MAX_BODY_CHARS},
                "tags": STRINGS}, "required": ["content"], "additionalProperties": False},
        ]}}}, ("findings",)),
    "Recall": obj({"message": {"type": "string", "maxLength": MAX_TURN_CHARS},
                   "context": {"type": ["string", "null"], "maxLength": MAX_TURN_CHARS}}, ("message",)),
    "FindMemories": obj({"query": {"type": "string", "minLength": 1, "maxLength": 2000},
                         "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                         "include_expired": {"type": "boolean"}}, ("query",)),
    "GetMemories": obj({"ids": {"anyOf": [
        {"type": "array", "items": {"type": "string", "maxLength": 200}, "minItems": 1, "maxItems": 100},
        {"type": "string", "minLength": 1, "maxLength": 10_000}]}}, ("ids",)),
    "StoreMemory": obj({"title": {"type": "string", "maxLength": MAX_TITLE_CHARS},
                        "content": {"type": "string", "minLength": 1, "maxLength": MAX_BODY_CHARS},
                        "tags": STRINGS}, ("content",)),
    "UpdateMemory": obj({"id": MEMORY_ID,
                         "old_text": {"type": "string", "maxLength": MAX_BODY_CHARS},
                         "new_text": {"type": "string", "maxLength": MAX_BODY_CHARS},
                         "new_content": {"type": "string", "maxLength": MAX_BODY_CHARS},
                         "title": {"type": "string", "maxLength": MAX_TITLE_CHARS},
                         "delete": {"type": "boolean"}}, ("id",)),
    "HelloChallenge": obj({"challenge": {"type": "string", "pattern": "^[A-Za-z0-9_-]{16,128}$",
                                "x-message": "must be 16-128 random letters, digits, - or _"}}, ("challenge",)),
    "SignInLink": obj({"as": {"type": "string", "minLength": 1, "maxLength": 100},
                       "next": {"type": "string", "pattern": "^/(?![/\\\\]).{0,500}$",
                                "x-message": "must be a path on this server, such as /doctor"}}),
    "TokenCreate": obj({"name": {"type": "string", "minLength": 1, "maxLength": 64},
                        "audience_ceiling": AUDIENCE,
                        "boundaries": {"type": "array", "items": {"type": "string", "maxLength": 200},
                                       "minItems": 1, "maxItems": 100}}, ("name", "audience_ceiling")),
    "EraseConfirm": obj({"confirm": {"type": "string", "enum": ["erase"],
                                     "description": "Erasing for good cannot be undone: the word says you mean it"}},
                        ("confirm",)),
}

# The query parameters of the GET routes that take some, by name: each one's schema (openapi.py
# documents them as `in: query`; api.query() checks them).
QUERIES = {
    "DeletedPage": {
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "At most this many (default 50)"},
        # 15 digits: any time in ms, and never a number SQLite's integers cannot hold
        "before": {"type": "string", "pattern": "^[0-9]{1,15}\\.tomb-[0-9a-f]{32}$",
                   "x-message": "is not a place in this list: send the next_before of the page before, or leave "
                                "it out for the first page",
                   "description": "The next_before of the page before: the page after it"},
    },
}

_OK = {"type": "boolean", "const": True}
_INT_OR_NULL = {"type": ["integer", "null"]}
_STR_OR_NULL = {"type": ["string", "null"]}


def ok(properties: dict, required: tuple[str, ...]) -> dict:
    return {"type": "object", "properties": {"ok": _OK, **properties}, "required": ["ok", *required]}


MEMORY = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "kind": {"type": "string", "enum": ["document", "record"]},
        "class": {"type": "string"}, "title": {"type": "string"}, "content": {"type": "string"},
        "audience": {"type": "string"}, "boundary": {"type": "string"}, "source": {"type": "string"},
        "sensitivity": {"type": "string"}, "recall_mode": {"type": "string"},
        "confidence": {"type": "number"}, "aliases": {"type": "array", "items": {"type": "string"}},
        "facets": {"type": "array", "items": {"type": "string"}}, "anchor_id": _STR_OR_NULL,
        "provenance": {"type": "object"}, "authored_at": {"type": "integer"},
        "created_at": {"type": "integer"}, "updated_at": {"type": "integer"},
        "expires_at": _INT_OR_NULL, "revision": {"type": "integer"}, "stale": {"type": "boolean"},
        "supersedes": _STR_OR_NULL, "score": {"type": ["number", "null"]},
    },
    "required": ["id", "kind", "class", "title", "content", "audience", "boundary", "stale"],
}
STORE_RESULT = {"type": "object", "properties": {
    "id": _STR_OR_NULL, "action": {"type": "string"}, "reason": {"type": "string"},
    "checkpoint_id": _STR_OR_NULL}, "required": ["action"]}
TOKEN = {"type": "object", "properties": {
    "id": {"type": "string"}, "name": {"type": "string"}, "audience_ceiling": AUDIENCE,
    "boundaries": {"type": "array", "items": {"type": "string"}}, "created_at": {"type": "integer"},
    "last_used_at": _INT_OR_NULL, "revoked": {"type": "boolean"}},
    "required": ["id", "name", "audience_ceiling", "boundaries", "revoked"]}

DELETED = {"type": "object", "properties": {
    "tombstone_id": {"type": "string"}, "memory_id": _STR_OR_NULL,
    "title": {"type": "string", "description": '"(erased)" once its text was erased for good'},
    "content": {**_STR_OR_NULL, "description": "null once its text was erased for good"},
    "class": _STR_OR_NULL, "audience": {"type": "string"}, "boundary": {"type": "string"},
    "deleted_at": {"type": "integer"}, "deleted_by": {**_STR_OR_NULL, "description": "ui, tool, import, api, review"},
    "reason": _STR_OR_NULL, "erased_at": _INT_OR_NULL},
    "required": ["tombstone_id", "memory_id", "title", "content", "audience", "boundary", "deleted_at", "reason",
                 "erased_at"]}

RESPONSES = {
    "Error": {"type": "object", "properties": {
        "ok": {"type": "boolean", "const": False}, "error": {"type": "string", "minLength": 1},
        "status": {"type": "integer", "minimum": 400, "maximum": 599}},
        "required": ["ok", "error", "status"], "additionalProperties": False},
    "Memory": MEMORY,
    "StoreResult": STORE_RESULT,
    "Token": TOKEN,
    "Status": ok({"memory": {"type": "object", "properties": {
        "status": {"type": "string", "enum": ["healthy", "degraded", "paused"]},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "paused_since": {"type": "integer"}}, "required": ["status", "reasons"]},
        "version": {"type": "string"}, "token": TOKEN}, ("memory", "version")),
    "Session": ok({"session": {"type": "object", "properties": {
        "id": {"type": "string"}, "audience": AUDIENCE, "boundary": {"type": "string"},
        "status": {"type": "string"}}, "required": ["id"]}}, ("session",)),
    "TurnAdded": ok({"turn": {"type": "integer", "minimum": 0,
                              "description": "the turn's index; 0 when memory is paused (nothing recorded)"},
                     "recorded": {"type": "boolean"}}, ("turn",)),
    "Stored": ok({"result": {"$ref": "#/components/schemas/StoreResult"}}, ("result",)),
    "FindingsStored": ok({"results": {"type": "array", "items": {"$ref": "#/components/schemas/StoreResult"}}},
                         ("results",)),
    "RecallResult": ok({
        "block": _STR_OR_NULL,
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "title": {"type": "string"}, "content": {"type": "string"},
            "class": {"type": "string"}, "score": {"type": ["number", "null"]}},
            "required": ["id", "title", "content", "class"]}},
        "receipt": _STR_OR_NULL,
        "degraded": {"type": "array", "items": {"type": "string"}},
        "took_ms": {"type": ["number", "null"], "description": "how long the recall took; null when none ran"}},
        ("block", "items", "receipt", "degraded", "took_ms")),
    "Receipt": ok({"receipt": {"type": "object", "properties": {
        "receipt": {"type": "string"}, "session_id": _STR_OR_NULL}, "required": ["receipt"]}}, ("receipt",)),
    "Found": ok({"items": {"type": "array", "items": {"$ref": "#/components/schemas/Memory"}},
                 "count": {"type": "integer"}}, ("items", "count")),
    "Got": ok({"items": {"type": "array", "items": {"$ref": "#/components/schemas/Memory"}},
               "missing": {"type": "array", "items": {"type": "object", "properties": {
                   "id": {"type": "string"}, "reason": {"type": "string"}}, "required": ["id", "reason"]}}},
              ("items", "missing")),
    "Updated": ok({"result": {"type": "object", "properties": {
        "id": {"type": "string"}, "action": {"type": "string"}, "new_id": _STR_OR_NULL,
        "replacements": {"type": "integer"}, "revision": _INT_OR_NULL, "reason": {"type": "string"}},
        "required": ["id", "action"]}},
        ("result",)),
    "Checkpoints": ok({"counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                       "pending": {"type": "array", "items": {"type": "object"}}}, ("counts", "pending")),
    "Stopping": ok({"stopping": {"type": "boolean"}, "pid": {"type": "integer"}}, ("stopping", "pid")),
    "Stats": ok({"stats": {"type": "object", "additionalProperties": {"type": "integer"}},
                 "started_at": {"type": "integer"}}, ("stats", "started_at")),
    "Checkpoint": ok({"checkpoint": {"type": "object", "properties": {
        "checkpoint_id": {"type": "string"}, "status": {"type": "string"},
        "memory_ids": {"type": "array", "items": {"type": "string"}},
        "action": _STR_OR_NULL, "reason": _STR_OR_NULL, "reason_words": _STR_OR_NULL},
        "required": ["checkpoint_id", "status", "memory_ids"]}},
        ("checkpoint",)),
    "Tokens": ok({"tokens": {"type": "array", "items": {"$ref": "#/components/schemas/Token"}}}, ("tokens",)),
    "TokenCreated": ok({"token": {"$ref": "#/components/schemas/Token"}, "secret": {"type": "string"}},
                       ("token", "secret")),
    "TokenRevoked": ok({"token": {"$ref": "#/components/schemas/Token"}}, ("token",)),
    "SignInLinkCreated": ok({"url": {"type": "string"}, "expires_in": {"type": "integer"},
                             "token": {"$ref": "#/components/schemas/Token"}}, ("url", "expires_in", "token")),
    "DeletedMemory": DELETED,
    "Deleted": ok({"deleted": {"type": "array", "items": {"$ref": "#/components/schemas/DeletedMemory"}},
                   "next_before": {**_STR_OR_NULL, "description": "send it as ?before= for the next page; null: "
                                                                  "this was the last"}}, ("deleted", "next_before")),
    "Restored": ok({"restored": {"type": "object", "properties": {
        "tombstone_id": {"type": "string"}, "memory_id": {**_STR_OR_NULL, "description": "the id that holds it now"}},
        "required": ["tombstone_id", "memory_id"]}}, ("restored",)),
    "Erased": ok({"erased": {"type": "object", "properties": {
        "tombstone_id": {"type": "string"}, "memory_id": _STR_OR_NULL,
        "counts": {"type": "object", "additionalProperties": {"type": "integer"},
                   "description": "how many of each place that held its text were blanked"},
        "scrubbed": {"type": "boolean", "description": "the database file was rewritten without it (VACUUM)"}},
        "required": ["tombstone_id", "memory_id", "counts", "scrubbed"]}}, ("erased",)),
    "OpenAPI": {"type": "object", "required": ["openapi", "paths"]},
    "HelloProof": ok({"service": {"type": "string", "const": "keepmind"},
                 "proof": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}, ("service", "proof")),
}

_TYPES = {
    "string": lambda v: isinstance(v, str),
    # JSON Schema counts 22.0 as an integer; routes convert with int().
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def validate(value, schema: dict, where: str = "body") -> None:
    """Raise InvalidInput naming the first place `value` breaks `schema`."""
    if "anyOf" in schema:
        errors, fitting = [], []
        for option in schema["anyOf"]:
            try:
                validate(value, option, where)
                return
            except InvalidInput as exc:
                errors.append(exc.message)
                if _fits_type(value, option):
                    fitting.append(exc.message)
        # An empty list is a list that is too short, not "a list, or else a string": say what the
        # options of its own type want; only a value no option's type fits hears them all.
        said = fitting or errors
        raise InvalidInput(said[0] if len(said) == 1 else f"{where} has the wrong shape: " + "; or ".join(said))
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_TYPES[t](value) for t in types):
            raise InvalidInput(f"{where} must be {' or '.join(_a(t) for t in types)}")
    if "enum" in schema and value not in schema["enum"]:
        raise InvalidInput(f"{where} must be one of {', '.join(map(str, schema['enum']))}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise InvalidInput(f"{where} is empty" if schema["minLength"] == 1
                               else f"{where} needs at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise InvalidInput(f"{where} is {len(value)} characters; the limit is {schema['maxLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            wrong_form = f"has the wrong form (expected {schema['pattern']})"
            raise InvalidInput(f"{where} " + schema.get("x-message", wrong_form))
    elif _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            raise InvalidInput(f"{where} must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise InvalidInput(f"{where} must be at most {schema['maximum']}")
    elif isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise InvalidInput(f"{where} is empty: give at least one" if schema["minItems"] == 1
                               else f"{where} needs at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise InvalidInput(f"{where} has {len(value)} items; the limit is {schema['maxItems']}")
        for i, item in enumerate(value):
            validate(item, schema.get("items", {}), f"{where}[{i}]")
    elif isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                raise InvalidInput(f"{where} needs {name!r}")
        for name, item in value.items():
            if name in props:
                validate(item, props[name], name if where == "body" else f"{where}.{name}")
            elif schema.get("additionalProperties") is False:
                allowed = ", ".join(props) or "no fields"
                raise InvalidInput(f"{where} has an unknown field {name!r}; allowed: {allowed}")


def _fits_type(value, schema: dict) -> bool:
    types = schema.get("type")
    if types is None:
        return False
    return any(_TYPES[t](value) for t in ([types] if isinstance(types, str) else types))


def _a(t: str) -> str:
    return {"integer": "a whole number", "array": "a list", "object": "an object", "null": "null",
            "string": "a string", "boolean": "true or false", "number": "a number"}[t]


def check_text(value, where: str = "body") -> None:
    """Refuse strings that cannot be stored as UTF-8 (lone surrogates from JSON escapes) and NUL
    characters (no text needs one; SQLite and every reader of the store would cut text there)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"{where} holds text that is not valid Unicode (a lone surrogate "
                               "escape such as \\ud800)") from None
        if "\x00" in value:
            raise InvalidInput(f"{where} holds a control or invisible character (NUL, \\u0000): remove it")
    elif isinstance(value, list):
        for item in value:
            check_text(item, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(key, where)
            check_text(item, key if where == "body" and isinstance(key, str) else where)  # name the field
