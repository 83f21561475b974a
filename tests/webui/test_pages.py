"""The pages' defences and contracts, through Flask's test client: sign-in codes, the session
cookie, CSRF, the Content-Security-Policy, full page or fragment from one URL, and that a GET
never writes."""

from __future__ import annotations

import hashlib
import io
import re

import pytest

from keepmind.engine import Relation
from keepmind.webui.app import create_app
from keepmind.webui.security import CSP


class Ticks:
    """A monotonic clock for sign-in codes that moves only when told to."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def ticks():
    return Ticks()


@pytest.fixture
def app(engine, ticks):
    return create_app(engine, {"port": 8765, "signin_clock": ticks})


@pytest.fixture
def local(engine):
    return engine.ensure_token(None)


def link(client, secret, **body):
    r = client.post("/api/v1/ui/links", json=body, headers={"Authorization": f"Bearer {secret}"})
    assert r.status_code == 200, r.text
    return r.get_json()["url"].split("127.0.0.1:8765")[1]


def csrf_of(client) -> str:
    return re.search(r'name="csrf-token" content="([^"]+)"', client.get("/").get_data(as_text=True)).group(1)


def test_a_code_signs_in_once_within_60_seconds(client, app, local, ticks):
    url = link(client, local.secret)
    ticks.now += 61
    assert client.get(url).status_code == 403  # expired
    url = link(client, local.secret)
    first = client.get(url)
    assert first.status_code == 303 and first.headers["Location"] == "/"
    cookie = first.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert client.get("/").status_code == 200
    with app.test_client() as other:  # another browser, the same link
        assert other.get(url).status_code == 403  # used already
        assert other.get("/").status_code == 303


def test_a_link_acts_as_a_named_token_only_if_the_caller_covers_it(client, engine, local):
    team = engine.create_token("teamview", "team", ["work"])
    client.get(link(client, local.secret, **{"as": "teamview"}))
    assert "teamview" in client.get("/").get_data(as_text=True)
    r = client.post("/api/v1/ui/links", json={"as": "local"}, headers={"Authorization": f"Bearer {team.secret}"})
    assert r.status_code == 403


def test_signed_out_pages_send_people_to_the_login_page(client):
    r = client.get("/memories?q=x")
    assert r.status_code == 303 and r.headers["Location"] == "/login?next=/memories%3Fq%3Dx"
    r = client.get("/memories", headers={"HX-Request": "true"})
    assert r.headers["HX-Redirect"].startswith("/login")
    assert client.post("/memories/bulk").status_code == 401
    assert client.get("/login").status_code == 200


def test_every_answer_carries_a_strict_csp_and_pages_vary_on_htmx(client, local, personal, engine):
    doc = engine.store(personal, "Note", "A note.").id
    client.get(link(client, local.secret))
    for path in ("/", "/memories", f"/memories/{doc}", "/anchors", "/login", "/static/app.css"):
        with client.get(path) as r:
            assert r.headers["Content-Security-Policy"] == CSP
        assert "'unsafe-inline'" not in CSP and "script-src 'self'" in CSP and "style-src 'self'" in CSP
    full = client.get("/memories")
    fragment = client.get("/memories", headers={"HX-Request": "true"})
    assert full.headers["Vary"] == fragment.headers["Vary"] == "HX-Request"
    assert b"<html" in full.data and b"<html" not in fragment.data and b"A note." in fragment.data
    page = client.get(f"/memories/{doc}").get_data(as_text=True)
    assert "<script>" not in page and ' style="' not in page  # no inline script or style


def test_a_change_needs_the_pages_csrf_token(client, local, personal, engine):
    doc = engine.store(personal, "Note", "A note.").id
    client.get(link(client, local.secret))
    assert client.post(f"/memories/{doc}/delete").status_code == 403
    assert client.post(f"/memories/{doc}/delete", headers={"X-CSRF-Token": "guess"}).status_code == 403
    assert engine.find(personal, "note")
    token = csrf_of(client)
    r = client.post(f"/memories/{doc}/delete", headers={"X-CSRF-Token": token, "HX-Request": "true"})
    assert r.status_code == 200 and r.headers["HX-Redirect"] == "/memories?deleted=1"
    assert engine.find(personal, "note") == []


def test_a_cross_site_post_is_refused_even_with_the_token(client, local, personal, engine):
    doc = engine.store(personal, "Note", "A note.").id
    client.get(link(client, local.secret))
    token = csrf_of(client)
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"},
                    {"Sec-Fetch-Site": "same-site"}):
        r = client.post(f"/memories/{doc}/delete", data={"csrf_token": token}, headers=headers)
        assert r.status_code == 403
    assert engine.find(personal, "note")


def test_revoking_the_token_signs_its_pages_out(client, engine, local):
    team = engine.create_token("t", "team")
    client.get(link(client, team.secret))
    assert client.get("/").status_code == 200
    engine.revoke_token("t")
    assert client.get("/").status_code == 303


def database_digest(engine) -> str:
    digest = hashlib.sha256()
    with engine.db.snapshot() as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for table in tables:
            for row in sorted(conn.execute(f"SELECT * FROM {table}"), key=repr):
                digest.update(repr(row).encode())
    return digest.hexdigest()


def test_no_page_a_get_reaches_writes_anything(client, engine, local, personal):
    engine.add_turn(personal, user="Anna lives in Lisbon.", assistant="Noted.")
    doc = engine.store(personal, "Anna", "Anna lives in Lisbon.", anchor="Anna",
                       relations=[Relation("lives_in", "Lisbon", "place")],
                       provenance={"session_id": personal, "turns": [1]}).id
    engine.update(personal, doc, old_text="Lisbon", new_text="Porto")
    gone = engine.store(personal, "Gone", "A wrong claim.").id
    engine.update(personal, gone, delete=True)
    receipt = engine.recall(personal, "where does Anna live").receipt_id
    engine.explain(receipt)  # written off the recall path: wait for it
    engine.store_memory(personal, "Queued", "A proposal waiting for curation.")
    job = engine.jobs.start("backfill", "Embedding memories", lambda progress: "done")
    engine.jobs.wait(job.id, 5)
    client.get(link(client, local.secret))
    anchor = engine.anchors(engine.viewer(local.token))[0].id
    staging = engine.stage_import("MEMORY.md", io.BytesIO(b"- The user likes green tea.\n"))
    engine.db.write(lambda conn: None)
    before = database_digest(engine)
    for path in (f"/transfer/preview/{staging}?boundary=notes", "/", "/memories", "/memories?q=anna", "/memories?sort=most_recalled", "/memories?deleted=1",
                 f"/memories/{doc}", f"/memories/{doc}/diff?a=1&b=2", f"/memories/{doc}/edit",
                 f"/memories/{doc}/delete", "/memories/new", "/anchors", f"/anchors/{anchor}",
                 f"/anchors/{anchor}/graph?depth=2", f"/receipts/{receipt}", "/receipts", "/receipts?injected=yes",
                 f"/receipts/{receipt}/pick?q=anna", "/checkpoints", "/review", "/scoping",
                 "/scoping/view?audience=team&boundary=work", f"/scoping/view?token={local.token.id}", "/models",
                 f"/jobs/{job.id}", "/doctor", "/settings", "/transfer"):
        for headers in ({}, {"HX-Request": "true"}):
            assert client.get(path, headers=headers).status_code == 200, path
        engine.db.write(lambda conn: None)
        assert database_digest(engine) == before, path
    assert client.get(f"/recalls/{receipt}").status_code == 308  # part 1's address of a receipt
    engine.db.write(lambda conn: None)
    assert database_digest(engine) == before


@pytest.mark.parametrize("path", ["/pause", "/resume", "/quit", "/checkpoints/cp-x/retry", "/checkpoints/cp-x/discard",
                                  "/review/cp-x/keep", "/review/cp-x/reject", "/tokens", "/tokens/tok-x/revoke",
                                  "/receipts/rcp-x/feedback", "/models/verify", "/models/upload",
                                  "/models/install-offline", "/models/x/switch", "/models/x/download", "/settings",
                                  "/settings/test-llm", "/transfer/export", "/transfer/preview", "/transfer/import/x",
                                  "/doctor"])
def test_every_change_of_part_two_needs_the_csrf_token(client, local, path):
    client.get(link(client, local.secret))
    assert client.post(path).status_code == 403
    assert client.post(path, headers={"X-CSRF-Token": "guess"}).status_code == 403


def test_the_pages_that_act_on_the_whole_store_refuse_a_narrower_token(client, engine, local):
    team = engine.create_token("teamview", "team", ["work"])
    client.get(link(client, local.secret, **{"as": "teamview"}))
    token = csrf_of(client)
    for path in ("/models", "/settings", "/doctor", "/transfer", "/quit"):
        assert client.get(path).status_code == 403, path
    for path in ("/pause", "/quit", "/settings", "/transfer/export", "/models/verify"):
        assert client.post(path, data={"csrf_token": token}).status_code == 403, path
    assert not engine.paused and team.token.id
    page = client.get("/checkpoints").get_data(as_text=True)
    assert "Pause memory" not in page and "Quit Keepmind" not in page and 'href="/settings"' not in page


def test_pause_resume_and_quit_from_the_header(app, client, engine, local):
    asked = []
    app.config["KEEPMIND_SHUTDOWN"] = lambda: asked.append("stop")
    client.get(link(client, local.secret))
    token = csrf_of(client)
    r = client.post("/pause", data={"csrf_token": token, "next": "/memories"})
    assert r.status_code == 303 and r.headers["Location"] == "/memories" and engine.paused
    assert "Resume memory" in client.get("/").get_data(as_text=True)
    r = client.post("/resume", data={"csrf_token": token, "next": "//evil.example/"})
    assert r.headers["Location"] == "/" and not engine.paused  # only a path of this server
    r = client.post("/quit", data={"csrf_token": token})
    assert r.status_code == 200 and b"Keepmind is stopping" in r.data and asked == ["stop"]
    del app.config["KEEPMIND_SHUTDOWN"]
    assert client.post("/quit", data={"csrf_token": token}).status_code == 403  # nothing to ask


def test_doctor_shows_its_last_run_and_runs_again_when_asked(client, engine, local, personal):
    from keepmind.engine.writepath import checkpoints

    client.get(link(client, local.secret))
    first = client.get("/doctor").get_data(as_text=True)
    assert "0 pending, 0 completed" in first and engine.last_doctor() is not None
    queued = engine.store_memory(personal, "Laptop", "The laptop has 32 GB.")
    engine.write(checkpoints.lease_next, "test:1:x", engine.now(), 60_000)
    engine.write(checkpoints.fail, queued.checkpoint_id, "test:1:x", "HTTP 401", engine.now(), max_attempts=1)
    assert "0 pending, 0 completed" in client.get("/doctor").get_data(as_text=True)  # the last run, still fresh
    again = client.post("/doctor", data={"csrf_token": csrf_of(client)}, headers={"HX-Request": "true"})
    text = again.get_data(as_text=True)
    assert "1 dead-lettered checkpoint" in text and 'href="/checkpoints"' in text and "<html" not in text


def test_uploads_have_their_own_body_limit(engine, local, ticks):
    from flask.testing import FlaskClient

    class Loopback(FlaskClient):
        def open(self, *args, **kwargs):
            kwargs.setdefault("base_url", "http://127.0.0.1:8765")
            return super().open(*args, **kwargs)

    app = create_app(engine, {"port": 8765, "signin_clock": ticks, "max_body_bytes": 2048,
                              "max_upload_bytes": 1_048_576})
    app.test_client_class = Loopback
    with app.test_client() as c:
        c.get(link(c, local.secret))
        token = csrf_of(c)
        body = {"csrf_token": token, "file": (io.BytesIO(b"- a note\n" * 500), "MEMORY.md")}
        r = c.post("/transfer/preview", data=body, follow_redirects=True)
        assert r.status_code == 200 and b"What importing MEMORY.md would do" in r.data  # 5 KB: over the page limit
        r = c.post("/settings", data={"csrf_token": token, "group": "Recall", "memory.llm.model": "x" * 5000})
        assert r.status_code == 413  # every other page keeps server.max_body_bytes
        big = c.post("/transfer/preview", data=b"x" * 1_100_000, content_type="multipart/form-data; boundary=b")
        assert big.status_code == 413  # over server.max_upload_bytes


def test_settings_never_store_a_secret_and_fragments_answer_per_group(client, engine, local):
    client.get(link(client, local.secret))
    token = csrf_of(client)
    r = client.post("/settings", data={"csrf_token": token, "group": "Curation LLM",
                                       "memory.llm.api_key_env": "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2},
                    headers={"HX-Request": "true"})
    assert r.status_code == 422 and b"never holds a secret" in r.data and b"<html" not in r.data
    assert b"a1B2c3D4" not in r.data or b"value=" in r.data  # only echoed back into the field it was typed in
    assert not engine.settings_path.exists()
    page = client.get("/settings").get_data(as_text=True)
    assert "a1B2c3D4" not in page and "environment variable" in page


def test_a_form_error_is_said_in_words_and_nothing_is_written(client, local, personal, engine):
    doc = engine.store(personal, "Note", "A note.").id
    client.get(link(client, local.secret))
    token = csrf_of(client)
    r = client.post(f"/memories/{doc}/edit", data={"csrf_token": token, "mode": "replace", "old_text": "absent",
                                                   "new_text": "x"}, headers={"HX-Request": "true"})
    assert r.status_code == 422 and b"The text to find is not in this memory" in r.data
    r = client.post("/memories", data={"csrf_token": token, "content": "A new one.", "audience": "team",
                                       "boundary": " "})
    assert r.status_code == 422 and b"choose a boundary" in r.data
    r = client.post("/memories", data={"csrf_token": token, "title": "Written", "content": "Written here.",
                                       "audience": "team", "boundary": "home"})
    assert r.status_code == 303
    written = engine.get(engine.viewer(local.token), [r.headers["Location"].rsplit("/", 1)[1]]).items[0]
    assert (written.audience, written.boundary, written.source) == ("team", "home", "ui")


def test_the_backlog_says_what_curation_made_of_each_completed_proposal(client, engine, local):
    sid = engine.open_session("personal", "work")
    first = engine.store_memory(sid, "Sky", "The sky over my house is green.")
    engine.drain_checkpoints()
    kept = engine.checkpoint(first.checkpoint_id)
    engine.update(sid, kept["memory_ids"][0], delete=True)
    again = engine.store_memory(sid, "Sky", "The sky over my house is green.")
    other = engine.store_memory(sid, "Tea", "I drink green tea every morning.")
    engine.drain_checkpoints()
    refused = engine.checkpoint(again.checkpoint_id)
    assert (refused["reason"], refused["reason_words"]) == ("tombstone", "refused: this claim was deleted as wrong")
    client.get(link(client, local.secret))
    page = client.get("/checkpoints").get_data(as_text=True)
    row = page[page.index(f'id="cp-{again.checkpoint_id}"'):]
    row = row[:row.index("</tr>")]
    assert "refused: this claim was deleted as wrong" in row and 'href="/memories?deleted=1"' in row
    tea = page[page.index(f'id="cp-{other.checkpoint_id}"'):]
    tea = tea[:tea.index("</tr>")]
    assert f'href="/memories/{engine.checkpoint(other.checkpoint_id)["memory_ids"][0]}"' in tea
    assert "refused" not in tea and "new" in tea


@pytest.mark.parametrize("target", ["/\t/evil.example", "/\n/evil.example", "/\r\n/x", "/ /evil.example",
                                    "/\\evil.example", "//evil.example", "/\x85/evil.example"])
def test_a_next_that_is_not_a_plain_path_goes_home_after_sign_in_and_after_pause(client, engine, local, target):
    """A tab passed the old check and Werkzeug dropped it from the Location: `//evil.example`, off
    the machine; a newline made the redirect a 500."""
    client.get(link(client, local.secret))
    r = client.get("/login", query_string={"next": target})
    assert (r.status_code, r.headers["Location"]) == (303, "/")
    r = client.post("/pause", data={"csrf_token": csrf_of(client), "next": target})
    assert (r.status_code, r.headers["Location"]) == (303, "/") and engine.paused
    r = client.post("/resume", data={"csrf_token": csrf_of(client), "next": target})
    assert (r.status_code, r.headers["Location"]) == (303, "/") and not engine.paused
    r = client.get("/login", query_string={"next": "/memories?q=Anna%20Lisbon"})
    assert r.headers["Location"] == "/memories?q=Anna%20Lisbon"  # a path of this server stays
