"""The browser UI's acceptance flows, each a person's path through a real served Keepmind in
headless Chromium: sign in, correct, delete and restore, provenance, the graph through time,
merge, a team token's view, and hostile text and requests."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from keepmind.engine import Relation
from keepmind.engine.clock import DAY_MS
from support.browser import hx_settle, sign_in


def test_a_one_time_link_signs_in_once_and_forged_codes_are_refused(page, live):
    with live.client() as api:
        url = api.post("/ui/links", json={}).json()["url"]
    page.goto(url)
    assert page.url == live.url + "/"  # the code is gone from the address bar
    assert page.get_by_role("heading", name="Overview").is_visible()
    cookie = next(c for c in page.context.cookies() if c["name"] == "km_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"

    other = page.context.browser.new_context()
    try:
        again = other.new_page()
        again.goto(url)  # the same link a second time
        assert "/signin" in again.url and again.get_by_text("used already").is_visible()
        again.goto(live.url + "/signin?code=forged-" + "x" * 40)
        assert again.get_by_text("not one Keepmind made").is_visible()
        again.goto(live.url + "/memories")
        assert again.url.startswith(live.url + "/login")  # still signed out
        again.get_by_label("Or paste an API token").fill(live.token)
        again.get_by_role("button", name="Sign in").click()
        again.wait_for_url(live.url + "/memories")
    finally:
        other.close()


def test_search_open_edit_then_revert_shows_each_change_as_a_diff(page, live):
    sid = live.engine.open_session("personal", "work")
    live.engine.store(sid, "Home airport", "My home airport is Lisbon.")
    sign_in(page, live)
    page.get_by_role("link", name="Memories").click()
    page.get_by_label("Search memories").fill("airport")
    page.get_by_role("button", name="Search").click()
    hx_settle(page)
    page.get_by_role("link", name="Home airport").click()
    page.get_by_role("link", name="Edit").click()
    page.get_by_role("link", name="Find and replace").click()
    page.get_by_label("Find (exact text, every occurrence)").fill("Lisbon")
    page.get_by_label("Replace with").fill("Porto")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url("**/memories/doc-*")
    assert page.locator(".memory .body").inner_text() == "My home airport is Porto."
    diff = page.locator("#diff")
    assert "Revision 1 → 2" in diff.inner_text()
    assert diff.locator("del").all_inner_texts() == ["Lisbon"] and diff.locator("ins").all_inner_texts() == ["Porto"]
    page.get_by_role("button", name="Revert to 1").click()
    page.wait_for_function("() => document.querySelector('.memory .body').textContent.includes('Lisbon')")
    assert "Revision 2 → 3" in page.locator("#diff").inner_text()
    assert page.locator("#diff del").all_inner_texts() == ["Porto"]
    assert page.locator("#diff ins").all_inner_texts() == ["Lisbon"]
    assert page.get_by_role("cell", name="revert to 1 (ui)").is_visible()


def test_delete_as_wrong_is_gone_everywhere_not_relearnt_listed_and_restorable(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    doc = eng.store(sid, "Favourite colour", "The user's favourite colour is chartreuse.").id
    with live.client() as api:
        found = api.post(f"/sessions/{sid}/tools/find_memories", json={"query": "chartreuse colour"}).json()
    assert [i["id"] for i in found["items"]] == [doc]
    sign_in(page, live)
    page.goto(live.url + f"/memories/{doc}")
    page.get_by_role("link", name="Delete as wrong…").click()
    dialog = page.get_by_role("dialog")
    assert "will not learn the same fact again" in dialog.inner_text()
    dialog.get_by_role("button", name="Delete as wrong").click()
    page.wait_for_url("**/memories?deleted=1")
    assert page.get_by_text("Favourite colour", exact=True).is_visible()
    assert page.get_by_text("by a person, here").is_visible()

    page.goto(live.url + "/memories?q=chartreuse")
    assert page.get_by_text("Nothing matches that search.").is_visible()
    with live.client() as api:
        found = api.post(f"/sessions/{sid}/tools/find_memories", json={"query": "chartreuse colour"}).json()
        recalled = api.post(f"/sessions/{sid}/recall", json={"message": "what is my favourite colour, chartreuse?"}).json()
    assert found["items"] == [] and doc not in str(recalled)
    eng.store_memory(sid, "Colour", "The user's favourite colour is chartreuse.")  # the write path proposes it again
    outcomes = eng.drain_checkpoints()
    assert outcomes and eng.find(sid, "chartreuse") == []
    assert any(e["action"] == "skip" and "tombstone" in e["reason"] for e in eng.curation_events(limit=5))

    page.goto(live.url + "/memories?deleted=1")
    page.get_by_role("button", name="Restore Favourite colour").click()
    page.wait_for_url(f"**/memories/{doc}")
    assert page.locator(".memory .body").inner_text() == "The user's favourite colour is chartreuse."
    assert [i.id for i in eng.find(sid, "chartreuse")] == [doc]


def test_a_memory_from_a_session_shows_that_sessions_turns_as_provenance(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work", title="Planning the trip")
    eng.add_turn(sid, user="We should book the flights soon.", assistant="Shall I look at dates?")
    eng.add_turn(sid, user="My passport expires in March 2027.", assistant="Noted, that is fine for the trip.")
    doc = eng.store(sid, "Passport", "The user's passport expires in March 2027.",
                    provenance={"session_id": sid, "turns": [2]}, source="observer").id
    sign_in(page, live)
    page.goto(live.url + f"/memories/{doc}")
    prov = page.locator("#provenance")
    assert "Planning the trip" in prov.inner_text()
    turns = prov.locator("li.turn")
    assert turns.count() == 2
    assert "book the flights" in turns.nth(0).inner_text() and "source" not in turns.nth(0).get_attribute("class")
    assert "passport expires" in turns.nth(1).inner_text() and "source" in turns.nth(1).get_attribute("class")


def test_an_anchor_walks_to_its_neighbours_and_shows_edges_through_time(page, live, clock):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Anna", "My sister Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
              relations=[Relation("lives_in", "Lisbon", "place"), Relation("sister_of", "Me", "person")])
    clock.advance(10 * DAY_MS)
    eng.store(sid, "Anna moved", "Anna moved to Porto.", anchor="Anna", anchor_type="person",
              relations=[Relation("lives_in", "Porto", "place")])
    anna = next(a for a in eng.anchors(eng.viewer(eng.get_token("local"))) if a.name == "Anna")
    sign_in(page, live)
    page.goto(live.url + f"/anchors/{anna.id}")
    current = page.locator("li.edge.current").all_inner_texts()
    retired = page.locator("li.edge.retired").all_inner_texts()
    assert any("lives in Porto" in t for t in current) and not any("Lisbon" in t for t in current)
    assert any("Previously lives in Lisbon" in t and "until 2026-01-11" in t and "replaced by Porto" in t
               for t in retired)
    assert page.locator("svg.graph .line.retired").count() == 1  # drawn dashed
    page.get_by_label("As of").fill("2026-01-05")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**as_of=2026-01-05")
    current = page.locator("li.edge.current").all_inner_texts()
    assert any("lives in Lisbon" in t for t in current) and not any("Porto" in t for t in current)
    page.goto(live.url + f"/anchors/{anna.id}")
    page.locator("svg.graph a.node", has_text="Lisbon").click()
    page.wait_for_url("**/anchors/anc-*")
    assert page.get_by_role("heading", name="Lisbon", exact=True).is_visible()
    assert any("Anna" in t for t in page.locator("li.edge").all_inner_texts())


def test_merging_two_anchors_moves_their_memories_under_the_merged_one(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Bob and tea", "Bob likes green tea.", anchor="Bob", anchor_type="person")
    eng.store(sid, "Robert plays chess", "Robert Smith plays chess on Sundays.", anchor="Robert Smith",
              anchor_type="person")
    sign_in(page, live)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Anchors").click()
    page.get_by_role("link", name="Bob", exact=True).click()
    page.get_by_label("Same thing as").select_option(label="Robert Smith (person)")
    page.get_by_role("button", name="Merge into it").click()
    page.get_by_role("dialog").get_by_role("button", name="Merge", exact=True).click()  # it asks first
    page.wait_for_function("() => document.querySelector('h1').textContent === 'Robert Smith'")
    assert page.get_by_text("Also known as Bob").is_visible()
    assert page.get_by_text("Merged in “Bob”").is_visible()
    titles = page.locator("section[aria-labelledby='mem-h'] li a").all_inner_texts()
    assert sorted(titles) == ["Bob and tea", "Robert plays chess"]
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Anchors").click()
    assert page.get_by_role("link", name="Bob", exact=True).count() == 0


def test_a_team_token_never_sees_a_personal_memory_anywhere(page, live):
    eng = live.engine
    personal = eng.open_session("personal", "work")
    team = eng.open_session("team", "work")
    secret = eng.store(personal, "Salary", "My salary is zebracode 123456.", anchor="Payroll",
                       relations=[Relation("paid_by", "Acme Corp", "org")]).id
    shared = eng.store(team, "Standup", "The team standup is at nine, zebracode room.", anchor="Standup",
                       relations=[Relation("held_in", "Room 4", "place")]).id
    payroll = next(a for a in eng.anchors(eng.viewer(eng.get_token("local"))) if a.name == "Payroll")
    live.make_token("teamview", "team", ["work"])
    sign_in(page, live, as_token="teamview")
    seen = []
    for path in ("/", "/memories", "/memories?q=zebracode", "/memories?q=salary", "/anchors", "/memories?deleted=1",
                 f"/memories/{shared}"):
        page.goto(live.url + path)
        seen.append(page.content())
    standup = next(a for a in eng.anchors(eng.viewer(eng.get_token("teamview"))) if a.name == "Standup")
    page.goto(live.url + f"/anchors/{standup.id}")
    seen.append(page.content())
    page.goto(live.url + f"/anchors/{standup.id}/graph?depth=2")
    seen.append(page.content())
    text = "\n".join(seen)
    assert "Standup" in text and "Room 4" in text
    for leak in ("Salary", "123456", "Payroll", "Acme Corp", secret):
        assert leak not in text, leak
    for path in (f"/memories/{secret}", f"/anchors/{payroll.id}"):
        response = page.goto(live.url + path)
        assert response.status == 404 and "123456" not in page.content()


class _Attacker(BaseHTTPRequestHandler):
    """Another site on this machine whose page posts a form to Keepmind when it loads."""

    target = ""

    def do_GET(self):
        html = (f'<form method="post" action="{self.target}"><input name="csrf_token" value="guess"></form>'
                "<script>document.forms[0].submit()</script>").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(html)))
        self.end_headers()
        self.wfile.write(html)

    def log_message(self, *args):
        pass


def test_hostile_memory_text_renders_as_text_and_cross_site_requests_are_refused(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    doc = eng.store(sid, hostile, hostile + " hostile marker", anchor=hostile).id
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    sign_in(page, live)
    for path in ("/", "/memories", "/memories?q=hostile", f"/memories/{doc}", "/anchors"):
        page.goto(live.url + path)
        page.wait_for_load_state("networkidle")
    page.goto(live.url + f"/memories/{doc}")
    assert page.locator(".memory .body").inner_text() == hostile + " hostile marker"
    assert page.get_by_role("heading", name=hostile).is_visible()
    assert page.locator("main script").count() == 0 and page.locator("main img").count() == 0
    assert dialogs == []

    _Attacker.target = f"{live.url}/memories/{doc}/delete"
    evil = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        with page.expect_response(_Attacker.target) as answer:
            page.goto(f"http://127.0.0.1:{evil.server_address[1]}/")
        assert answer.value.status == 403
    finally:
        evil.shutdown()
        evil.server_close()
    assert eng.find(sid, "hostile marker")[0].id == doc  # still there
    foreign = httpx.get(live.url + "/", headers={"Host": "evil.example"})
    assert foreign.status_code == 403


def test_several_memories_at_once_are_made_personal_or_deleted_as_wrong(page, live):
    eng = live.engine
    team = eng.open_session("team", "work")
    ids = {t: eng.store(team, t, f"{t} is a shared team note.").id for t in ("Alpha", "Beta", "Gamma")}
    sign_in(page, live)
    page.goto(live.url + "/memories")
    page.get_by_label("Select Alpha").check()
    page.get_by_role("button", name="Make personal").click()
    dialog = page.get_by_role("dialog")
    assert "No page can widen an audience again" in dialog.inner_text()
    assert eng.memory(eng.viewer(eng.get_token("local")), ids["Alpha"]).audience == "team"  # asked first
    dialog.get_by_role("button", name="Make personal").click()
    hx_settle(page)
    assert page.get_by_text("1 now visible to personal sessions only.").is_visible()
    assert eng.memory(eng.viewer(eng.get_token("local")), ids["Alpha"]).audience == "personal"
    page.get_by_label("Select Beta").check()
    page.get_by_label("Select Gamma").check()
    page.get_by_role("button", name="Delete as wrong…").click()
    dialog = page.get_by_role("dialog")
    assert "Delete 2 memories as wrong?" in dialog.inner_text()
    dialog.get_by_role("button", name="Delete as wrong").click()
    dialog.wait_for(state="detached")
    assert page.get_by_text("Deleted 2 as wrong.").is_visible()
    assert [i.title for i in eng.browse(eng.viewer(eng.get_token("local"))).items] == ["Alpha"]
