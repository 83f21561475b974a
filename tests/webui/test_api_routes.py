"""The /api/v1 routes do what the contract says, against a real server."""

from __future__ import annotations

from keepmind.webui.api import version


def test_status_has_the_contract_shape(api):
    body = api.get("/status").json()
    assert body["ok"] is True
    assert body["memory"] == {"status": "healthy", "reasons": []}
    assert body["version"] == version() and body["version"]
    assert body["token"]["name"] == "local" and body["token"]["audience_ceiling"] == "personal"


def test_a_session_lifecycle_through_the_api(live, api):
    opened = api.post("/sessions", json={"audience": "personal", "boundary": " work ", "channel": "cli",
                                         "title": "planning"}).json()
    sid = opened["session"]["id"]
    assert opened["session"] == {"id": sid, "audience": "personal", "boundary": "work", "status": "open"}
    assert api.post(f"/sessions/{sid}/turns", json={"user": "hi", "assistant": "hello",
                                                    "tools": ["search"], "recalled_ids": []}).json()["turn"] == 1
    assert api.post(f"/sessions/{sid}/turns", json={"user": "again"}).json()["turn"] == 2
    assert api.post(f"/sessions/{sid}/end").json()["session"]["status"] == "ended"
    with live.engine.db.snapshot() as conn:
        row = conn.execute("SELECT status, token_id, channel FROM sessions WHERE session_id=?", (sid,)).fetchone()
        turns = conn.execute("SELECT user_text, tools_json FROM session_turns WHERE session_id=? ORDER BY turn_index",
                             (sid,)).fetchall()
    local_token_id = api.get("/status").json()["token"]["id"]
    assert row == ("ended", local_token_id, "cli")
    assert turns == [("hi", '["search"]'), ("again", "[]")]


def test_find_get_and_update_memories_through_the_tools(live, api):
    sid = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["session"]["id"]
    mid = live.engine.store(sid, "Coffee", "The user drinks oat milk flat whites. Oat milk only.").id
    found = api.post(f"/sessions/{sid}/tools/find_memories", json={"query": "oat milk", "limit": 3}).json()
    assert found["count"] == 1 and found["items"][0]["id"] == mid
    assert found["items"][0]["class"] == "durable_fact" and found["items"][0]["score"] > 0
    got = api.post(f"/sessions/{sid}/tools/get_memories", json={"ids": [mid, "doc-" + "9" * 32, "nope"]}).json()
    assert [i["content"] for i in got["items"]] == ["The user drinks oat milk flat whites. Oat milk only."]
    assert [m["id"] for m in got["missing"]] == ["doc-" + "9" * 32, "nope"]
    updated = api.post(f"/sessions/{sid}/tools/update_memory",
                       json={"id": mid, "old_text": "Oat milk", "new_text": "Soy milk"}).json()
    assert updated["result"] == {"id": mid, "action": "replaced", "new_id": None, "replacements": 1, "revision": 2,
                                 "reason": "replaced 1 occurrence: revision 2 (the earlier text stays in its history)"}
    got = api.post(f"/sessions/{sid}/tools/get_memories", json={"ids": mid}).json()
    assert got["items"][0]["content"] == "The user drinks oat milk flat whites. Soy milk only."
    deleted = api.post(f"/sessions/{sid}/tools/update_memory", json={"id": mid, "delete": True}).json()
    assert deleted["result"]["action"] == "deleted"
    assert api.post(f"/sessions/{sid}/tools/find_memories", json={"query": "oat milk"}).json()["count"] == 0


def test_checkpoints_lists_only_what_the_token_may_see(live, api):
    def queue(conn, audience, boundary, now):
        conn.execute("INSERT INTO memory_checkpoints(checkpoint_id, trigger_type, priority, payload_json, audience,"
                     " boundary, available_at, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
                     (f"chk-{audience}", "explicit", 100, "{}", audience, boundary, now, now, now))
    live.engine.write(queue, "personal", "work", live.engine.now())
    live.engine.write(queue, "team", "work", live.engine.now())
    body = api.get("/checkpoints").json()
    assert body["counts"]["pending"] == 2
    assert {p["checkpoint_id"] for p in body["pending"]} == {"chk-personal", "chk-team"}
    with live.client(live.make_token("team-reader", "team")) as team_api:
        team_view = team_api.get("/checkpoints").json()
    assert team_view["counts"]["pending"] == 1  # counts cover only what the token may see, too
    assert [p["checkpoint_id"] for p in team_view["pending"]] == ["chk-team"]


def test_token_management_routes(api):
    created = api.post("/tokens", json={"name": "claude-code", "audience_ceiling": "team",
                                        "boundaries": ["work", "oss"]}).json()
    assert created["secret"].startswith("km_")
    assert created["token"]["boundaries"] == ["work", "oss"] and created["token"]["revoked"] is False
    names = [t["name"] for t in api.get("/tokens").json()["tokens"]]
    assert sorted(names) == ["claude-code", "local"]
    dup = api.post("/tokens", json={"name": "claude-code", "audience_ceiling": "team"})
    assert dup.status_code == 400 and "already" in dup.json()["error"]
    assert api.post(f"/tokens/{created['token']['id']}/revoke").json()["token"]["revoked"] is True
    assert [t["name"] for t in api.get("/tokens").json()["tokens"]] == ["local"]
    assert api.post("/tokens/nobody/revoke").status_code == 404


def test_store_memory_compaction_and_findings_queue_checkpoints(live, api):
    sid = api.post("/sessions", json={"audience": "team", "boundary": "work"}).json()["session"]["id"]
    stored = api.post(f"/sessions/{sid}/tools/store_memory",
                      json={"title": "Release", "content": "Release 2.0 ships on 3 March.", "tags": ["release"]})
    assert stored.status_code == 200, stored.text
    assert stored.json()["result"]["action"] == "queued" and stored.json()["result"]["checkpoint_id"]
    compacted = api.post(f"/sessions/{sid}/compaction", json={"summary": "We planned release 2.0."}).json()
    assert compacted["result"]["action"] == "queued"
    found = api.post(f"/sessions/{sid}/findings",
                     json={"findings": ["The CI needs Python 3.11", {"title": "Docs", "content": "Docs build with mkdocs."}]})
    assert [r["action"] for r in found.json()["results"]] == ["queued", "queued"]
    pending = api.get("/checkpoints").json()["pending"]
    assert stored.json()["result"]["checkpoint_id"] in {p["checkpoint_id"] for p in pending}
    assert {(p["audience"], p["boundary"]) for p in pending} == {("team", "work")}
    assert len(pending) == 4


def test_store_memory_never_queues_a_secret(live, api):
    sid = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["session"]["id"]
    fake_key = "AKIA" + "Q" * 16
    r = api.post(f"/sessions/{sid}/tools/store_memory", json={"content": f"the aws key is {fake_key}"})
    assert r.status_code == 200
    assert r.json()["result"]["action"] == "blocked" and r.json()["result"]["checkpoint_id"] is None
    assert fake_key not in r.text


def test_recall_answers_and_its_receipt_explains_it(live, api):
    sid = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["session"]["id"]
    live.engine.store(sid, "Espresso grinder", "The user grinds espresso with a Baratza Sette 270 grinder.")
    r = api.post(f"/sessions/{sid}/recall", json={"message": "which espresso grinder do I use?"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"ok", "block", "items", "receipt", "degraded", "took_ms"}
    assert body["receipt"].startswith("rcp-")
    assert "Baratza" in body["block"]  # lexical-only here (embeddings off): deterministic
    assert body["items"][0]["class"] == "durable_fact" and body["items"][0]["content"].endswith("270 grinder.")
    receipt = api.get(f"/sessions/{sid}/receipts/{body['receipt']}").json()["receipt"]
    assert receipt["receipt"] == body["receipt"] and receipt["session_id"] == sid
    # the answer says how long recall took: the whole call, so no less than the receipt's pipeline
    assert isinstance(body["took_ms"], float) and body["took_ms"] >= receipt["timings_ms"]["total_ms"] > 0
    live.engine.pause()
    paused = api.post(f"/sessions/{sid}/recall", json={"message": "which espresso grinder do I use?"}).json()
    assert paused["degraded"] == ["memory_paused"] and paused["took_ms"] is None
    live.engine.resume()
    other = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["session"]["id"]
    assert api.get(f"/sessions/{other}/receipts/{body['receipt']}").status_code == 404


def test_answers_are_never_cached_or_sniffed(api):
    for r in (api.get("/status"), api.get("/nothing")):
        assert r.headers["Cache-Control"] == "no-store"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert "Access-Control-Allow-Origin" not in r.headers
