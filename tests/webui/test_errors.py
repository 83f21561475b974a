"""One error envelope for every error, EngineError statuses mapped, never a 500 for client input."""

from __future__ import annotations

import httpx
import pytest

from keepmind.engine.errors import MemoryDisabled

NO_SESSION = "ses-" + "0" * 32


def assert_envelope(r, status: int) -> str:
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"ok", "error", "status"}
    assert body["ok"] is False and body["status"] == status
    assert isinstance(body["error"], str) and body["error"]
    assert "Traceback" not in body["error"]
    return body["error"]


def test_unknown_route_is_404_envelope(api, live):
    said = assert_envelope(api.get("/nothing/here"), 404)
    assert "no such route: GET /api/v1/nothing/here (" in said and "with the token" in said
    # where it points answers with the token, and says how to send one without it
    assert api.get("/openapi.json").status_code == 200
    bare = httpx.get(live.url + "/api/v1/openapi.json")
    assert bare.status_code == 401 and "Authorization: Bearer" in bare.json()["error"]


def test_unknown_api_route_is_404_envelope(api):
    assert_envelope(api.get("/no-such-route"), 404)


def test_unknown_page_is_an_html_404_page_not_json(live):
    with live.client() as c:
        r = c.get(live.url + "/no-such-page?x=<b>")
    assert r.status_code == 404
    assert r.headers["Content-Type"].startswith("text/html")
    assert "there is no page here" in r.text
    assert "Traceback" not in r.text and "openapi" not in r.text


def test_wrong_method_is_405_envelope(api):
    r = api.delete("/status")
    assert_envelope(r, 405)
    assert "GET" in r.headers["Allow"]


@pytest.mark.parametrize("raw,fragment", [
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe\x00", "not valid JSON"),
    (b"[1, 2]", "must be an object"),
    (b'"text"', "must be an object"),
    (b'{"audience": "personal"}', "needs 'boundary'"),
    (b'{"audience": "boss", "boundary": "w"}', "must be one of"),
    (b'{"audience": "personal", "boundary": "   "}', "is blank"),
    (b'{"audience": "personal", "boundary": 7}', "must be a string"),
    (b'{"audience": "personal", "boundary": "w", "extra": 1}', "unknown field 'extra'"),
    (b'{"audience": "personal", "boundary": "\\ud800"}', "not valid Unicode"),
    (b'{"audience": "personal", "boundary": "w", "title": "a\\u0000b"}', "title holds a control or invisible character (NUL"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"audience": "personal", "boundary": "w", "title": ' + b"[" * 500 + b"]" * 500 + b"}", "title"),
])
def test_bad_session_bodies_are_400_with_what_to_fix(api, raw, fragment):
    r = api.post("/sessions", content=raw, headers={"Content-Type": "application/json"})
    assert fragment in assert_envelope(r, 400)


@pytest.mark.parametrize("body,fragment", [
    ({"query": ""}, "query is empty"),
    ({"query": "x", "limit": 0}, "at least 1"),
    ({"query": "x", "limit": 10**30}, "at most 100"),
    ({"query": "x", "limit": 2.5}, "whole number"),
    ({"query": "x", "limit": True}, "whole number"),
    ({"query": "x", "include_expired": "yes"}, "true or false"),
    ({"query": ["x"]}, "must be a string"),
])
def test_bad_tool_input_is_400(live, api, body, fragment):
    sid = live.engine.open_session("personal", "work")
    assert fragment in assert_envelope(api.post(f"/sessions/{sid}/tools/find_memories", json=body), 400)


def test_session_ids_are_checked(api):
    assert "not a session id" in assert_envelope(api.post("/sessions/banana/turns", json={"user": "x"}), 400)
    assert "no session" in assert_envelope(api.post(f"/sessions/{NO_SESSION}/turns", json={"user": "x"}), 404)


def test_engine_errors_keep_their_status(live, api):
    sid = live.engine.open_session("personal", "work")
    r = api.post(f"/sessions/{sid}/tools/update_memory", json={"id": "doc-" + "1" * 32, "delete": True})
    assert "no memory" in assert_envelope(r, 404)
    r = api.post(f"/sessions/{sid}/tools/update_memory", json={"id": "bad-id", "delete": True})
    assert "not a memory id" in assert_envelope(r, 400)
    api.post(f"/sessions/{sid}/end")
    assert "has ended" in assert_envelope(api.post(f"/sessions/{sid}/turns", json={"user": "hi"}), 400)


def test_an_ended_session_takes_no_write_and_no_recall_in_the_words_a_turn_is_refused_with(live, api):
    sid = live.engine.open_session("personal", "work")
    kept = live.engine.store(sid, "Kayak", "The user keeps the kayak in the garage.").id
    api.post(f"/sessions/{sid}/end")
    for path, body in [("tools/store_memory", {"content": "The user drinks green tea."}),
                       ("compaction", {"summary": "We talked about tea."}),
                       ("findings", {"findings": ["The build takes 4 minutes."]}),
                       ("tools/update_memory", {"id": kept, "old_text": "garage", "new_text": "shed"}),
                       ("recall", {"message": "Where is my kayak?"})]:
        assert "has ended: open a new session" in assert_envelope(api.post(f"/sessions/{sid}/{path}", json=body),
                                                                   400), path
    found = api.post(f"/sessions/{sid}/tools/find_memories", json={"query": "kayak"})  # reading what it saw
    assert found.status_code == 200
    with live.engine.db.snapshot() as conn:
        assert conn.execute("SELECT COUNT(*) FROM memory_checkpoints").fetchone()[0] == 0
    assert "garage" in live.engine.get(live.engine.open_session("personal", "work"), [kept]).items[0].body


def test_unexpected_failure_is_a_500_envelope_without_details(live, api, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("internal detail that must not leak")
    monkeypatch.setattr(live.engine, "status", boom)
    message = assert_envelope(api.get("/status"), 500)
    assert "internal detail" not in message


def test_memory_disabled_tools_refuse_and_recall_returns_nothing(tmp_path, clock, start_live):
    live = start_live(tmp_path / "home", clock=clock, memory__enabled=False)
    try:
        sid = live.engine.open_session("personal", "work")
        with live.client() as api:
            assert api.get("/status").json()["memory"]["status"] == "paused"
            tools = [("find_memories", {"query": "x"}), ("get_memories", {"ids": ["doc-" + "0" * 32]}),
                     ("update_memory", {"id": "doc-" + "0" * 32, "delete": True}),
                     ("store_memory", {"content": "remember this"})]
            for tool, body in tools:
                r = api.post(f"/sessions/{sid}/tools/{tool}", json=body)
                assert "memory is turned off" in assert_envelope(r, MemoryDisabled.status)
            r = api.post(f"/sessions/{sid}/recall", json={"message": "anything"})
            assert r.status_code == 200
            assert r.json()["block"] is None and r.json()["items"] == []
    finally:
        live.stop()


def test_a_nul_character_in_memory_text_is_refused_on_every_path(live, api):
    from keepmind.engine import InvalidInput

    sid = live.engine.open_session("personal", "work")
    r = api.post(f"/sessions/{sid}/tools/store_memory", json={"title": "Seat", "content": "window\u0000seat"})
    assert "content holds a control or invisible character (NUL" in assert_envelope(r, 400)
    with pytest.raises(InvalidInput, match=r"content holds a control or invisible character \(NUL"):
        live.engine.store(sid, "Seat", "window\x00seat")  # what the browser's editor and imports call
    assert live.engine.list_memories(sid) == []


@pytest.mark.parametrize("ids,said", [
    ([], "ids is empty: give at least one"),  # not "…needs at least 1 item(s); or ids must be a string"
    ("", "ids is empty"),
    (7, "ids has the wrong shape: ids must be a list; or ids must be a string"),
])
def test_get_memories_says_what_is_wrong_with_ids_in_the_terms_of_what_was_sent(live, api, ids, said):
    sid = live.engine.open_session("personal", "work")
    message = assert_envelope(api.post(f"/sessions/{sid}/tools/get_memories", json={"ids": ids}), 400)
    assert message == said


def test_a_turn_with_a_malformed_recalled_id_is_refused_by_name(live, api):
    sid = live.engine.open_session("personal", "work")
    said = assert_envelope(api.post(f"/sessions/{sid}/turns", json={"user": "a", "assistant": "b",
                                                                   "recalled_ids": ["doc-nothex"]}), 400)
    assert said.startswith("recalled_ids holds something that is not a memory id") and "nothex" not in said
    ok = api.post(f"/sessions/{sid}/turns", json={"user": "a", "recalled_ids": ["doc-" + "a" * 32]})
    assert ok.status_code == 200 and ok.json()["turn"] == 1


def test_a_wrong_method_on_a_session_route_says_the_whole_sentence(live, api):
    sid = live.engine.open_session("personal", "work")
    r = api.get(f"/sessions/{sid}/recall")
    assert assert_envelope(r, 405) == (
        "this route does not accept that method: the Allow header names the ones it does, and GET "
        "/api/v1/openapi.json (with the token) lists each route's methods")
    assert "POST" in r.headers["Allow"]  # what the message points to is there


DIGITS = "9" * 5000  # past Python's int-string conversion limit (4300 digits): still valid JSON


@pytest.mark.parametrize("raw,said", [
    (b'{"query": "x", "limit": ' + DIGITS.encode() + b"}", "limit must be at most 100"),
    (b'{"query": "x", "limit": -' + DIGITS.encode() + b"}", "limit must be at least 1"),
    (b'{"query": ' + DIGITS.encode() + b"}", "query must be a string"),
    (b'{"query": "x", "page": ' + DIGITS.encode() + b"}",
     "body has an unknown field 'page'; allowed: query, limit, include_expired"),
])
def test_a_number_too_long_to_convert_is_out_of_range_for_its_field_not_invalid_json(live, api, raw, said):
    sid = live.engine.open_session("personal", "work")
    r = api.post(f"/sessions/{sid}/tools/find_memories", content=raw, headers={"Content-Type": "application/json"})
    assert assert_envelope(r, 400) == said


def test_a_number_too_long_to_convert_in_a_field_without_bounds_is_refused_by_its_length(live, api, monkeypatch):
    from keepmind.webui import schemas

    unbounded = {**schemas.REQUESTS["FindMemories"]}
    unbounded["properties"] = {**unbounded["properties"], "limit": {"type": "integer"}}
    monkeypatch.setitem(schemas.REQUESTS, "FindMemories", unbounded)  # the live server runs in this process
    sid = live.engine.open_session("personal", "work")
    r = api.post(f"/sessions/{sid}/tools/find_memories", content=b'{"query": "x", "limit": ' + DIGITS.encode() + b"}",
                 headers={"Content-Type": "application/json"})
    assert assert_envelope(r, 400) == "limit is a number of 5000 digits: more than the 4300 a number here may have"
