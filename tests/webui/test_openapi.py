"""The OpenAPI 3.1 document matches the registered routes, and every reference in it resolves."""

from __future__ import annotations

import json
import re

import pytest

from keepmind.engine import InvalidInput
from keepmind.webui import schemas
from keepmind.webui.api import OPERATIONS, version
from keepmind.webui.app import create_app
from keepmind.webui.openapi import document


def flask_routes(app) -> set[tuple[str, str]]:
    out = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/"):
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            out.add((method.lower(), path))
    return out


def documented(doc) -> set[tuple[str, str]]:
    return {(method, path) for path, ops in doc["paths"].items() for method in ops}


def test_document_lists_exactly_the_registered_routes(engine):
    app = create_app(engine)
    assert documented(document(OPERATIONS, version())) == flask_routes(app)
    assert len(flask_routes(app)) == len(OPERATIONS) >= 15


def test_the_contract_routes_are_all_there():
    want = {("get", "/api/v1/status"), ("post", "/api/v1/sessions"), ("get", "/api/v1/checkpoints"),
            ("get", "/api/v1/openapi.json")}
    want |= {("post", f"/api/v1/sessions/{{session_id}}/{p}")
             for p in ("turns", "end", "compaction", "findings", "recall", "tools/find_memories",
                       "tools/get_memories", "tools/store_memory", "tools/update_memory")}
    assert want <= documented(document(OPERATIONS, version()))


def test_document_is_openapi_31_with_bearer_security_and_unique_operation_ids():
    doc = document(OPERATIONS, version())
    assert doc["openapi"] == "3.1.0"
    assert doc["security"] == [{"bearer": []}]
    assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))


def test_only_the_instance_proof_is_declared_without_a_token():
    doc = document(OPERATIONS, version())
    overridden = {(method, path) for path, ops in doc["paths"].items() for method, op in ops.items()
                  if "security" in op}
    assert overridden == {("post", "/api/v1/hello")}
    hello = doc["paths"]["/api/v1/hello"]["post"]
    assert hello["security"] == [] and "401" not in hello["responses"]


def refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def test_every_ref_resolves_and_every_error_uses_the_envelope():
    doc = document(OPERATIONS, version())
    names = set(doc["components"]["schemas"])
    for ref in refs(doc):
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in names, ref
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            for code, response in op["responses"].items():
                schema = response["content"]["application/json"]["schema"]["$ref"]
                assert (schema == "#/components/schemas/Error") == (code != "200"), (path, method, code)
            for param in re.findall(r"{([a-z_]+)}", path):
                assert any(p["name"] == param and p["in"] == "path" for p in op["parameters"])


def test_the_routes_validate_with_the_documented_request_schemas():
    doc = document(OPERATIONS, version())
    for op in OPERATIONS:
        if op.request:
            assert doc["components"]["schemas"][op.request] is schemas.REQUESTS[op.request]


def test_served_document_is_the_document(api):
    served = api.get("/openapi.json").json()
    assert served == json.loads(json.dumps(document(OPERATIONS, version())))


@pytest.mark.parametrize("value,ok", [(5, True), (5.0, True), (5.5, False), (True, False), ("5", False)])
def test_integer_fields_follow_json_schema(value, ok):
    schema = {"type": "integer"}
    if ok:
        schemas.validate(value, schema)
    else:
        with pytest.raises(InvalidInput):
            schemas.validate(value, schema)
