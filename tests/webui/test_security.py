"""Security against a real server: tokens, Host allowlist, cross-site refusal, body limit, scope ceilings."""

from __future__ import annotations

import httpx
import pytest

from keepmind.engine.clock import FakeClock
from keepmind.webui.api import OPERATIONS

SECRET_WORD = "zorblat"


@pytest.fixture(scope="module")
def world(tmp_path_factory, start_live):
    """A personal session and memory (local token), and a team-ceiling token with its own session."""
    live = start_live(tmp_path_factory.mktemp("scope") / "home", clock=FakeClock())
    eng = live.engine
    personal_sid = eng.open_session("personal", "work")
    personal_id = eng.store(personal_sid, "Salary", f"The user's salary is 123456 {SECRET_WORD}.").id
    team_sid = eng.open_session("team", "work")
    team_id = eng.store(team_sid, "Standup", f"The team standup is at 9:30 ({SECRET_WORD} team note).").id
    receipt = eng.recall(personal_sid, "what is my salary?").receipt_id
    team_token = live.make_token("team-bot", "team")
    with live.client(team_token) as team_api:
        team_session = team_api.post("/sessions", json={"audience": "team", "boundary": "work"}).json()["session"]["id"]
    yield {"live": live, "personal_sid": personal_sid, "personal_id": personal_id, "team_id": team_id,
           "receipt": receipt or "rcp-" + "0" * 32,
           "team_token": team_token, "team_session": team_session}
    live.stop()


def session_bodies(memory_id: str) -> dict:
    return {
        "add_turn": {"user": "what is my salary?", "assistant": "I do not know"},
        "end_session": {},
        "compaction": {"summary": "we talked about the salary"},
        "findings": {"findings": ["the salary is secret"]},
        "recall": {"message": f"salary {SECRET_WORD}"},
        "find_memories": {"query": f"salary {SECRET_WORD}"},
        "get_memories": {"ids": [memory_id]},
        "store_memory": {"title": "x", "content": "the salary is 0"},
        "update_memory": {"id": memory_id, "new_content": "overwritten by the team token"},
        "recall_receipt": None,  # a GET
    }


SESSION_ROUTES = sorted(op.operation_id for op in OPERATIONS if "<session_id>" in op.rule)


def call(client, operation_id: str, session_id: str, body, receipt: str = "rcp-" + "0" * 32):
    op = next(o for o in OPERATIONS if o.operation_id == operation_id)
    path = op.rule.replace("<session_id>", session_id).replace("<receipt_id>", receipt)
    return client.request(op.method, path, json=body)


def test_the_scope_matrix_covers_every_session_route():
    assert set(session_bodies("doc-x")) == set(SESSION_ROUTES)


@pytest.mark.parametrize("operation_id", SESSION_ROUTES)
def test_a_personal_session_is_not_found_for_a_team_token_exactly_like_a_missing_one(world, operation_id):
    live = world["live"]
    missing = "ses-" + "f" * 32
    body = session_bodies(world["personal_id"])[operation_id]
    with live.client(world["team_token"]) as team_api:
        r = call(team_api, operation_id, world["personal_sid"], body, world["receipt"])
        absent = call(team_api, operation_id, missing, body, world["receipt"])
    assert r.status_code == 404, r.text
    assert r.json() == {"ok": False, "status": 404, "error": f"no session {world['personal_sid']}: open one first"}
    assert absent.json() == {"ok": False, "status": 404, "error": f"no session {missing}: open one first"}
    assert SECRET_WORD not in r.text


# Ending its own session reads nothing (and is covered by the 404 matrix above).
@pytest.mark.parametrize("operation_id", [r for r in SESSION_ROUTES if r != "end_session"])
def test_team_token_in_its_own_session_never_sees_a_personal_memory(world, operation_id):
    live = world["live"]
    with live.client(world["team_token"]) as team_api:
        r = call(team_api, operation_id, world["team_session"], session_bodies(world["personal_id"])[operation_id],
                 world["receipt"])
    assert r.status_code < 500 or r.status_code == 503, r.text
    assert "123456" not in r.text and "Salary" not in r.text
    if operation_id == "recall_receipt":
        assert r.status_code == 404  # another session's receipt
    if operation_id == "get_memories":
        assert r.json()["items"] == [] and r.json()["missing"][0]["id"] == world["personal_id"]
    if operation_id == "update_memory":
        assert r.status_code == 404
    if operation_id == "find_memories":
        assert [i["id"] for i in r.json()["items"]] == [world["team_id"]]


OTHER_ROUTES = sorted(op.operation_id for op in OPERATIONS if "<session_id>" not in op.rule)
OTHER_BODIES = {"status": None, "open_session": {"audience": "team", "boundary": "work"},
                "hello": {"challenge": "a" * 32},
                "checkpoints": None, "list_tokens": None, "openapi_json": None,
                "create_token": {"name": "team-child", "audience_ceiling": "team"},
                "revoke_token": {}, "pause": {}, "resume": {}, "checkpoint": None, "stats": None,
                "shutdown": {}, "sign_in_link": {"as": "local"},
                "deleted_memories": None, "restore_deleted": {}, "erase_deleted": {"confirm": "erase"}}


def test_the_other_routes_list_is_complete():
    assert set(OTHER_BODIES) == set(OTHER_ROUTES)


@pytest.mark.parametrize("operation_id", OTHER_ROUTES)
def test_no_other_route_shows_a_team_token_anything_personal(world, operation_id):
    live = world["live"]
    eng = live.engine
    if not world.get("queued"):
        world["queued"] = eng.store_memory(world["personal_sid"], "Bonus", f"The bonus is quuxbonus {SECRET_WORD}.").checkpoint_id
    if not world.get("tomb"):  # a personal memory deleted as wrong: its tombstone
        wrong = eng.store(world["personal_sid"], "Old salary", f"The salary was quuxold {SECRET_WORD}.").id
        eng.update(world["personal_sid"], wrong, delete=True)
        world["tomb"] = next(t["tombstone_id"] for t in eng.deleted()[0] if t["memory_id"] == wrong)
    op = next(o for o in OPERATIONS if o.operation_id == operation_id)
    path = (op.rule.replace("<token_id>", "local").replace("<checkpoint_id>", world.get("queued") or "chk-none")
            .replace("<tombstone_id>", world["tomb"]))
    with live.client(world["team_token"]) as team_api:
        r = team_api.request(op.method, path, json=OTHER_BODIES[operation_id])
    assert r.status_code in (200, 403, 404), r.text
    assert SECRET_WORD not in r.text and "quuxbonus" not in r.text and world["personal_sid"] not in r.text
    if world.get("queued"):
        assert world["queued"] not in r.text
    if operation_id in ("pause", "resume", "stats", "sign_in_link", "shutdown"):
        assert r.status_code == 403  # the local token is wider than the team token; only it pauses or stops
    if operation_id == "revoke_token":
        assert r.status_code == 404  # a token wider than the caller is answered as one that does not exist
    if operation_id == "checkpoint":
        assert r.status_code == 404  # a personal checkpoint does not exist for a team token
    if operation_id in ("restore_deleted", "erase_deleted"):
        assert r.status_code == 404  # nor a personal deletion
    assert "quuxold" not in r.text and world["tomb"] not in r.text.replace(f"no deleted memory {world['tomb']}", "")
    assert any(t["tombstone_id"] == world["tomb"] and t["erased_at"] is None for t in eng.deleted()[0])
    assert not eng.paused and not live.daemon.shutdown_requested.is_set()


def test_the_personal_memory_survived_the_team_token(world):
    eng = world["live"].engine
    item = eng.get(world["personal_sid"], [world["personal_id"]]).items[0]
    assert item.body == f"The user's salary is 123456 {SECRET_WORD}."
    with eng.db.snapshot() as conn:
        turns = conn.execute("SELECT COUNT(*) FROM session_turns WHERE session_id=?",
                             (world["personal_sid"],)).fetchone()[0]
        status = conn.execute("SELECT status FROM sessions WHERE session_id=?", (world["personal_sid"],)).fetchone()[0]
    assert (turns, status) == (0, "open")


def test_team_token_cannot_open_a_personal_session(world):
    with world["live"].client(world["team_token"]) as team_api:
        r = team_api.post("/sessions", json={"audience": "personal", "boundary": "work"})
    assert r.status_code == 403 and "ceiling is team" in r.json()["error"]


def test_boundary_limited_token_stays_in_its_boundary(live):
    sid = live.engine.open_session("team", "home")
    secret = live.make_token("work-only", "team", ["work"])
    with live.client(secret) as api:
        assert api.post("/sessions", json={"audience": "team", "boundary": "home"}).status_code == 403
        assert api.post("/sessions", json={"audience": "team", "boundary": "work"}).status_code == 200
        r = api.post(f"/sessions/{sid}/tools/find_memories", json={"query": "anything"})
    assert r.status_code == 404 and r.json()["error"] == f"no session {sid}: open one first"


def test_cross_boundary_policy_is_cut_to_the_token_boundaries(tmp_path, clock, start_live):
    live = start_live(tmp_path / "home", clock=clock, policy__cross_boundary_reads={"work": ["home"]})
    try:
        home_sid = live.engine.open_session("team", "home")
        live.engine.store(home_sid, "Garden", "The garden hose is green.")
        work_sid = live.engine.open_session("team", "work")
        wide = live.make_token("wide", "team")
        narrow = live.make_token("narrow", "team", ["work"])
        body = {"query": "garden hose"}
        with live.client(wide) as api:
            assert api.post(f"/sessions/{work_sid}/tools/find_memories", json=body).json()["count"] == 1
        with live.client(narrow) as api:
            assert api.post(f"/sessions/{work_sid}/tools/find_memories", json=body).json()["count"] == 0
            r = api.post(f"/sessions/{work_sid}/recall", json={"message": "garden hose"})
            assert r.status_code == 403 and "boundary 'home'" in r.json()["error"]
            assert "green" not in r.text
    finally:
        live.stop()


def test_public_sessions_get_nothing(live, api):
    live.engine.store(live.engine.open_session("personal", "work"), "Coffee", "The user likes coffee.")
    sid = api.post("/sessions", json={"audience": "public", "boundary": "work", "title": "Anna's surprise party",
                                      "channel": "slack-general"}).json()["session"]["id"]
    with live.engine.db.snapshot() as conn:  # not even what it was called is kept
        assert list(conn.execute("SELECT title, channel FROM sessions WHERE session_id=?", (sid,))) == [(None, None)]
    r = api.post(f"/sessions/{sid}/recall", json={"message": "coffee"})
    assert r.status_code == 200
    assert r.json() == {"ok": True, "block": None, "items": [], "receipt": None, "degraded": [], "took_ms": None}
    for tool, body in (("find_memories", {"query": "coffee"}), ("get_memories", {"ids": ["doc-" + "0" * 32]}),
                       ("store_memory", {"content": "remember this"}),
                       ("update_memory", {"id": "doc-" + "0" * 32, "delete": True})):
        r = api.post(f"/sessions/{sid}/tools/{tool}", json=body)
        assert r.status_code == 403, (tool, r.text)
        assert "public sessions" in r.json()["error"]
    for route, body in (("compaction", {"summary": "s"}), ("findings", {"findings": ["f"]})):
        assert api.post(f"/sessions/{sid}/{route}", json=body).status_code == 403
    # Not even its conversation is kept: a turn is answered as when memory is paused.
    r = api.post(f"/sessions/{sid}/turns", json={"user": "My brother Tomasz lives in Krakow."})
    assert r.status_code == 200 and r.json()["recorded"] is False
    with live.engine.db.snapshot() as conn:
        assert list(conn.execute("SELECT COUNT(*) FROM session_turns WHERE session_id=?", (sid,))) == [(0,)]


def test_only_the_instance_proof_answers_without_a_token():
    assert [op.rule for op in OPERATIONS if op.public] == ["/hello"]


@pytest.mark.parametrize("path,method", [(f"/api/v1{op.rule}", op.method) for op in OPERATIONS if not op.public])
def test_every_api_route_needs_a_token(live, path, method):
    path = (path.replace("<session_id>", "ses-" + "0" * 32).replace("<token_id>", "local")
            .replace("<receipt_id>", "rcp-" + "0" * 32).replace("<tombstone_id>", "tomb-" + "0" * 32))
    r = httpx.request(method, live.url + path, json={} if method == "POST" else None)
    assert r.status_code == 401
    assert r.json()["status"] == 401 and r.json()["ok"] is False
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


def test_wrong_and_revoked_tokens_are_401(live):
    with live.client("km_not-a-real-token") as api:
        assert api.get("/status").status_code == 401
    secret = live.make_token("short-lived", "personal")
    with live.client(secret) as api:
        assert api.get("/status").status_code == 200
        assert api.post("/tokens/short-lived/revoke").json()["token"]["revoked"] is True
        assert api.get("/status").status_code == 401
    with live.client(None, Authorization=f"Basic {secret}") as api:
        assert api.get("/status").status_code == 401


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost",
                                  "127.0.0.1.evil.example:{port}", "[::1]:{port}"])
def test_foreign_host_is_refused(live, host):
    with live.client(Host=host.format(port=live.port)) as api:
        r = api.get("/status")
    assert r.status_code == 403
    assert "Host" in r.json()["error"]


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_own_host_is_accepted(live, host):
    with live.client(Host=host.format(port=live.port)) as api:
        assert api.get("/status").status_code == 200


@pytest.mark.parametrize("headers", [
    {"Origin": "https://evil.example"},
    {"Origin": "null"},
    {"Origin": "http://127.0.0.1:1"},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": "http://localhost:{port}", "Sec-Fetch-Site": "cross-site"},
])
def test_cross_site_post_is_refused(live, headers):
    headers = {k: v.format(port=live.port) for k, v in headers.items()}
    with live.client(**headers) as api:
        r = api.post("/sessions", json={"audience": "personal", "boundary": "work"})
    assert r.status_code == 403
    assert "cross-site" in r.json()["error"]
    with live.engine.db.snapshot() as conn:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0


@pytest.mark.parametrize("headers", [
    {"Origin": "http://127.0.0.1:{port}"}, {"Origin": "http://localhost:{port}"},
    {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"},
])
def test_same_origin_post_is_accepted(live, headers):
    headers = {k: v.format(port=live.port) for k, v in headers.items()}
    with live.client(**headers) as api:
        assert api.post("/sessions", json={"audience": "personal", "boundary": "work"}).status_code == 200


def test_cross_site_get_is_not_state_changing_and_allowed(live):
    with live.client(Origin="https://evil.example", **{"Sec-Fetch-Site": "cross-site"}) as api:
        assert api.get("/status").status_code == 200


def test_body_over_the_limit_is_413_in_the_envelope(live, api):
    limit = live.engine.settings["server.max_body_bytes"]
    r = api.post("/sessions", content=b"{" + b" " * limit + b"}", headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert r.json() == {"ok": False, "status": 413, "error": r.json()["error"]}
    assert "server.max_body_bytes" in r.json()["error"]


def test_token_routes_never_create_or_revoke_wider_tokens(live):
    team = live.make_token("team-admin", "team", ["work"])
    with live.client(team) as api:
        r = api.post("/tokens", json={"name": "sneaky", "audience_ceiling": "personal"})
        assert r.status_code == 403
        r = api.post("/tokens", json={"name": "sneaky2", "audience_ceiling": "team", "boundaries": ["home"]})
        assert r.status_code == 403
        assert api.post("/tokens/local/revoke").status_code == 404  # wider: as if there were none
        created = api.post("/tokens", json={"name": "narrower", "audience_ceiling": "public", "boundaries": ["work"]})
        assert created.status_code == 200, created.text
        names = {t["name"] for t in api.get("/tokens").json()["tokens"]}
    assert names == {"team-admin", "narrower"}  # the wider local token is not listed
    secret = created.json()["secret"]
    with live.client(secret) as api:
        assert api.post("/sessions", json={"audience": "public", "boundary": "work"}).status_code == 200
        assert api.post("/sessions", json={"audience": "team", "boundary": "work"}).status_code == 403
