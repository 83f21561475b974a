"""What a walk through the pages found, fixed, on a real server: a merge of anchors asks first and
names both anchors and their types (same-type anchors listed first, another type marked); a wrong
setting is said under its field; a refused upload is shown alone, without an earlier job's card;
the pause time reads like every other time; a wrong "as of" date, a broken page link and a revision
that does not exist are said in place, with a way on; an empty "should have been recalled" search
asks for words."""

from __future__ import annotations

import re

import httpx
import pytest

from keepmind.webui.pages.render import when

HX = {"HX-Request": "true"}


def anchor_id(eng, name: str) -> str:
    return next(a.id for a in eng.anchors(eng.viewer(eng.get_token("local")), limit=100) if a.name == name)


@pytest.fixture
def anchors(server):
    """Anna (a person), Bob (a person) and Rex (a pet), in one audience and boundary."""
    eng = server.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Anna and tea", "Anna drinks green tea.", anchor="Anna", anchor_type="person")
    eng.store(sid, "Bob plays chess", "Bob plays chess on Sundays.", anchor="Bob", anchor_type="person")
    eng.store(sid, "Rex the dog", "Rex is the family's dog; he likes long walks.", anchor="Rex", anchor_type="pet")
    return {name: anchor_id(eng, name) for name in ("Anna", "Bob", "Rex")}


def test_merging_an_anchor_asks_first_naming_both_and_how_it_is_undone(server, browser, anchors):
    web, csrf = browser
    r = web.post(f"/anchors/{anchors['Anna']}/merge", data={"csrf_token": csrf, "into": anchors["Bob"]}, headers=HX)
    assert r.status_code == 200 and r.headers["HX-Retarget"] == "#dialog-slot"
    said = " ".join(r.text.split())
    assert "Merge “Anna” into “Bob”?" in said
    assert "“Anna” (person) becomes another name of “Bob” (person)" in said
    assert "Until another anchor is merged into “Bob”, its page can undo this merge." in said
    assert f'name="into" value="{anchors["Bob"]}"' in r.text and 'name="confirmed" value="yes"' in r.text
    assert web.get(f"/anchors/{anchors['Anna']}").status_code == 200  # nothing merged yet
    r = web.post(f"/anchors/{anchors['Anna']}/merge",
                 data={"csrf_token": csrf, "into": anchors["Bob"], "confirmed": "yes"})
    assert r.status_code == 303 and r.headers["Location"].endswith(f"/anchors/{anchors['Bob']}")
    bob = web.get(f"/anchors/{anchors['Bob']}").text
    assert "Also known as Anna" in bob
    # Undo: the merge's own button on Bob's page; Anna stands again and her page opens
    undo = re.search(r'action="(/anchors/[^"]+/merges/[^"]+/undo)"', bob).group(1)
    r = web.post(undo, data={"csrf_token": csrf})
    assert r.status_code == 303 and r.headers["Location"].endswith(f"/anchors/{anchors['Anna']}")
    anna = web.get(f"/anchors/{anchors['Anna']}")
    assert anna.status_code == 200 and "Anna and tea" in anna.text
    assert "Also known as Anna" not in web.get(f"/anchors/{anchors['Bob']}").text
    r = web.post(undo, data={"csrf_token": csrf}, headers=HX)  # twice: said in place
    assert r.status_code == 422 and "undone already" in r.text


def test_merging_a_person_into_a_pet_says_they_are_different_types(server, browser, anchors):
    web, csrf = browser
    r = web.post(f"/anchors/{anchors['Anna']}/merge", data={"csrf_token": csrf, "into": anchors["Rex"]}, headers=HX)
    said = " ".join(r.text.split())
    assert "Merge a person into a pet?" in said
    assert "“Anna” is a person and “Rex” is a pet: they are different kinds of thing" in said
    assert "Merge the person into the pet" in said
    assert anchor_id(server.engine, "Anna") == anchors["Anna"]  # still there


def test_the_merge_list_offers_the_same_type_first_and_marks_another_type(server, browser, anchors):
    web, _ = browser
    html = web.get(f"/anchors/{anchors['Anna']}").text
    select = re.search(r'<select id="into".*?</select>', html, re.S).group(0)
    options = re.findall(r'<option value="anc-[^"]+">([^<]+)</option>', select)
    assert options == ["Bob (person)", "Rex (pet, not person)"]
    assert re.search(r'<optgroup label="Another type, not person">\s*<option value="' + anchors["Rex"], select)


def test_a_wrong_setting_is_said_under_its_field_which_takes_the_focus(server, browser):
    web, csrf = browser
    r = web.post("/settings", headers=HX, data={"csrf_token": csrf, "group": "Recall",
                                                "memory.recall.max_items": "99",
                                                "memory.recall.receipt_retention_days": "-5"})
    assert r.status_code == 422
    head, form = r.text.split("<form", 1)
    assert "role=\"alert\"" not in head  # not at the top of the group, a screen above
    field = re.search(r'<div class="setting invalid" id="(memory\.recall\.[a-z_]+)">(.*?)</div>\s*(?=<div class="setting|'
                      r'<div class="actions)', form, re.S)
    assert field, "no field is marked invalid"
    name, body = field.groups()
    assert re.search(rf'<input id="f-{re.escape(name)}"[^>]*aria-describedby="d-{re.escape(name)} e-{re.escape(name)}"'
                     r'[^>]*aria-invalid="true" autofocus', body)
    error = re.search(rf'<div class="field-error" id="e-{re.escape(name)}"><p class="notice error" role="alert">(.*?)</p>', body, re.S).group(1)
    assert name in error and "Nothing in Recall was saved." in error
    # and by the Save button, where the person pressed it
    actions = re.search(r'<div class="actions">(.*?)</div>', form, re.S).group(1)
    assert f'href="#f-{name}"' in actions and "Not saved" in actions
    assert not (server.daemon.home / "keepmind.json").exists()


def test_a_saved_setting_says_so_by_the_save_button(server, browser):
    web, csrf = browser
    r = web.post("/settings", headers=HX, data={"csrf_token": csrf, "group": "Recall", "memory.recall.max_items": "4"})
    assert r.status_code == 200
    actions = re.search(r'<div class="actions">(.*?)</div>', r.text, re.S).group(1)
    assert 'id="save-recall"' in actions and "Saved." in actions and "memory.recall.max_items" in actions


def test_a_refused_upload_is_shown_without_the_earlier_jobs_failed_card(server, browser):
    web, csrf = browser
    eng = server.engine
    r = web.post("/models/upload", headers=HX, data={"csrf_token": csrf, "as_id": "mine"},
                 files=[("files", ("model.onnx", b"not an onnx graph"))])
    assert r.status_code == 200, r.text
    job = next(j for j in eng.jobs.list() if j.kind == "model-import")
    assert eng.jobs.wait(job.id, 30).state == "failed"
    assert f'id="job-{job.id}"' in web.get("/models").text  # its card is news on the page
    r = web.post("/models/upload", headers=HX, data={"csrf_token": csrf},
                 files=[("files", ("broken.zip", b"this is not a zip archive"))])
    assert r.status_code == 422
    assert re.search(r'class="notice error" role="alert">[^<]*broken\.zip', r.text), r.text[:600]
    assert f'id="job-{job.id}"' not in r.text and "job-failed" not in r.text


def test_the_paused_notice_gives_its_time_like_the_other_times(server, browser):
    web, _ = browser
    server.engine.pause()
    since = server.engine.paused_since()
    html = web.get("/").text
    assert f"memory is paused (since {when(since)})" in html
    assert not re.search(r"since \d{4}-\d\d-\d\dT", html)


def test_a_wrong_as_of_date_is_said_on_the_anchor_page_next_to_the_date(server, browser, anchors):
    web, _ = browser
    r = web.get(f"/anchors/{anchors['Anna']}", params={"as_of": "notadate"})
    assert r.status_code == 400
    assert "<h1>Anna</h1>" in r.text and "Anna and tea" in r.text  # the anchor, as it stands today
    form = re.search(r'<form class="asof".*?</form>', r.text, re.S).group(0)
    assert re.search(r'<input id="as_of"[^>]*aria-invalid="true" aria-describedby="as-of-error"', form)
    assert re.search(r'id="as-of-error" role="alert">that date is not a date: pick one', form)
    r = web.get(f"/anchors/{anchors['Anna']}/graph", params={"as_of": "notadate"})
    assert r.status_code == 400 and "<h1>Around Anna</h1>" in r.text and "pick one" in r.text
    # a date before 1970 is out of the range the message gives (it was taken as a time before any memory)
    for path in (f"/anchors/{anchors['Anna']}", f"/anchors/{anchors['Anna']}/graph"):
        r = web.get(path, params={"as_of": "0001-01-01"})
        assert r.status_code == 400 and "out of range: pick one between 1970-01-01 and 9999-12-30" in r.text
        assert "Showing how things stood" not in r.text


@pytest.mark.parametrize("path, first", [("/memories?cursor=garbage", "/memories"),
                                         ("/memories?deleted=1&cursor=garbage", "/memories?deleted=1")])
def test_a_broken_page_link_says_so_with_a_link_to_the_first_page(server, browser, path, first):
    web, _ = browser
    r = web.get(path)
    assert r.status_code == 400
    alert = re.search(r'role="alert">(.*?)</p>', r.text, re.S).group(1)
    assert "that page link is broken" in alert
    assert re.search(rf'<a href="{re.escape(first)}"[^>]*>the first page</a>', alert), alert


@pytest.mark.parametrize("query", ["from=1&to=9", "a=1&b=9", "a=1&b=x"])
def test_a_diff_to_a_revision_that_does_not_exist_says_so(server, browser, query):
    web, _ = browser
    eng = server.engine
    sid = eng.open_session("personal", "work")
    doc = eng.store(sid, "Anna", "Anna lives in Lisbon.").id
    eng.update(sid, doc, new_content="Anna lives in Porto.", source="ui")
    r = web.get(f"/memories/{doc}/diff?{query}")
    assert r.status_code == 400
    alert = re.search(r'role="alert">(.*?)</p>', r.text, re.S).group(1)
    assert ("there is no revision 9" in alert or "“x” is not a revision number" in alert)
    assert "this memory has revisions 1 to 2" in alert
    assert "Revision 1 → 2" not in r.text  # not another pair, silently
    r = web.get(f"/memories/{doc}?{query}")
    assert r.status_code == 400 and "this memory has revisions 1 to 2" in r.text
    assert web.get(f"/memories/{doc}/diff?a=1&b=2").status_code == 200


def test_an_empty_should_have_been_recalled_search_asks_for_words(server, browser):
    web, _ = browser
    eng = server.engine
    sid = eng.open_session("personal", "work", title="Daily chat")
    eng.store(sid, "Coffee", "The user drinks black coffee every morning.")
    with server.client() as api:
        receipt = api.post(f"/sessions/{sid}/recall", json={"message": "coffee shops in Berlin"}).json()["receipt"]
    r = web.get(f"/receipts/{receipt}/pick", params={"q": "  "}, headers=HX)
    assert r.status_code == 422
    assert "matches “”" not in r.text
    assert re.search(r'id="pick-error" role="alert">Type a few words of the memory', r.text)
    assert re.search(r'<input id="pick-q"[^>]*aria-invalid="true" aria-describedby="pick-error" autofocus', r.text)
    r = web.get(f"/receipts/{receipt}/pick", params={"q": "coffee"}, headers=HX)
    assert r.status_code == 200 and "Coffee should have been recalled" in r.text


def test_a_memory_found_by_its_words_with_a_lexical_score_of_zero_is_explained(server, browser):
    """In a store of two memories each word is in half of them: FTS5's bm25 is about 0 (its IDF is
    clamped), and a receipt's "Lexical 0.000" at rank 1 read as a match on nothing."""
    web, _ = browser
    eng = server.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Milk", "I drink oat milk in my coffee.")
    eng.store(sid, "Anna", "My sister Anna lives in Lisbon.")
    with server.client() as api:
        receipt = api.post(f"/sessions/{sid}/recall", json={"message": "what milk do I drink?"}).json()["receipt"]
    said = " ".join(web.get(f"/receipts/{receipt}").text.split())
    assert re.search(r'0\.000<a href="#common-words" class="note-mark"', said)
    assert "* Found by its words, with a lexical score of about 0" in said
    # a store large enough for its words to be rare gives a real bm25, and no note
    for i in range(20):
        eng.store(sid, f"Fact {i}", f"The shelf number {i} holds jars of pickled item{i}.")
    later = eng.open_session("personal", "work")  # not the session that has it injected already
    with server.client() as api:
        receipt = api.post(f"/sessions/{later}/recall", json={"message": "what milk do I drink?"}).json()["receipt"]
    page = web.get(f"/receipts/{receipt}").text
    assert "Milk" in page and "common-words" not in page


def test_a_should_have_been_recalled_mark_names_its_memory_and_no_opposite_mark_is_offered(server, browser):
    """A walk marked a memory found by Find: the list said "doc-fd3a…", not its title; and Find offered
    "This should have been recalled" for a memory already marked "don't inject this here"."""
    web, csrf = browser
    eng = server.engine
    sid = eng.open_session("personal", "work", title="Daily chat")
    tom = eng.store(sid, "Brother", "My brother Tom lives in Berlin.").id
    peanuts = eng.store(sid, "Allergy", "I am allergic to peanuts.").id
    with server.client() as api:
        found = api.post(f"/sessions/{sid}/recall", json={"message": "Am I allergic to peanuts?"}).json()
    receipt = found["receipt"]
    assert [i["id"] for i in found["items"]] == [peanuts]
    eng.label_recall(receipt, peanuts, "not_here")
    r = web.post(f"/receipts/{receipt}/feedback", headers=HX,
                 data={"csrf_token": csrf, "label": "should_recall", "memory_id": tom})
    marked = r.text.split("Marked “this should have been recalled”:")[1]
    assert f'href="/memories/{tom}">Brother</a>' in marked
    r = web.get(f"/receipts/{receipt}/pick", params={"q": "peanuts"}, headers=HX)
    assert "marked: don't inject this here" in r.text and "Allergy should have been recalled" not in r.text


def test_a_credential_typed_as_an_anchors_new_name_is_refused_and_kept_nowhere(server, browser, anchors):
    web, csrf = browser
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    r = web.post(f"/anchors/{anchors['Anna']}/rename", data={"csrf_token": csrf, "name": secret}, headers=HX)
    assert r.status_code in (400, 422) and "GitHub" in r.text and secret not in r.text
    with server.engine.db.snapshot() as conn:
        names = [n for (n,) in conn.execute("SELECT canonical_name FROM memory_anchors UNION ALL"
                                            " SELECT alias FROM anchor_aliases")]
    assert "Anna" in names and not any(secret in n for n in names)


@pytest.mark.parametrize("before", ["9223372036854775808", "99999999999999999999999", "²", "١٢"])
def test_a_page_link_number_sqlite_cannot_hold_or_that_is_no_ascii_number_is_ignored(server, browser, before):
    web, _ = browser
    for path in ("/receipts", "/scoping"):
        assert web.get(path, params={"before": before}).status_code == 200  # the first page, not a 500


@pytest.mark.parametrize("revision", ["abc", "99999999999999999999999", "²"])
def test_a_revert_to_a_revision_that_is_no_number_is_refused_in_words(server, browser, revision):
    web, csrf = browser
    sid = server.engine.open_session("personal", "work")
    doc = server.engine.store(sid, "Home", "User lives in Lisbon.").id
    r = web.post(f"/memories/{doc}/revert", data={"csrf_token": csrf, "revision": revision})
    assert r.status_code == 400 and "pick the revision to revert to" in r.text


def test_a_deeply_nested_value_in_a_settings_field_is_refused_in_words(server, browser):
    web, csrf = browser
    r = web.post("/settings", data={"csrf_token": csrf, "group": "Policy",
                                    "policy.cross_boundary_reads": "[" * 10_000 + "]" * 10_000}, headers=HX)
    assert r.status_code in (400, 422) and "internal error" not in r.text.lower()
    assert server.engine.settings["policy.cross_boundary_reads"] == {}


def test_a_token_limited_to_a_boundary_is_shown_no_other_boundary_on_the_scoping_page(server):
    eng = server.engine
    eng.open_session("personal", "other")
    eng.open_session("team", "work")
    secret = server.make_token("teamwork", "team", ("work",))
    web = httpx.Client(base_url=server.url, timeout=30)
    with httpx.Client(base_url=server.url + "/api/v1", headers={"Authorization": f"Bearer {secret}"}) as api:
        url = api.post("/ui/links", json={}).json()["url"]
    try:
        assert web.get(url).status_code == 303
        page = web.get("/scoping").text
        assert '<option value="work">' in page and '"other"' not in page and ">other<" not in page
    finally:
        web.close()


def test_a_recall_that_found_only_what_its_session_was_given_says_so(server, browser):
    """A walk asked twice in one session: the second receipt said "no memory matched the message's
    words or meaning", though the memory matched and was skipped as already given."""
    web, _ = browser
    eng = server.engine
    sid = eng.open_session("personal", "work")
    peanuts = eng.store(sid, "Allergy", "I am allergic to peanuts.").id
    with server.client() as api:
        first = api.post(f"/sessions/{sid}/recall", json={"message": "Am I allergic to peanuts?"}).json()
        again = api.post(f"/sessions/{sid}/recall", json={"message": "Am I allergic to peanuts?"}).json()
    assert [i["id"] for i in first["items"]] == [peanuts] and again["items"] == []
    said = " ".join(web.get(f"/receipts/{again['receipt']}").text.split())
    assert "no memory matched" not in said
    assert "Nothing new to consider: 1 memory this session was already given earlier was not given again" in said


def test_the_recalls_list_does_not_link_a_narrow_token_to_a_receipt_it_is_refused(tmp_path, make_engine):
    """A walk signed in with a token for boundary work, whose sessions' recall also reads home
    (policy.cross_boundary_reads): Recalls and the Overview listed such a recall with what it
    injected, and its link opened a refusal."""
    from keepmind.webui.app import create_app
    from support.pages import Loopback

    def sign_in(client, engine, token_name):
        secret = engine.ensure_token(None).secret
        r = client.post("/api/v1/ui/links", json={"as": token_name}, headers={"Authorization": f"Bearer {secret}"})
        assert client.get(r.get_json()["url"].split("127.0.0.1:8765")[1]).status_code == 303

    eng = make_engine(tmp_path / "h", policy__cross_boundary_reads={"work": ["home"]})
    eng.store(eng.open_session("personal", "home"), "Garden", "The garden hose is green.")
    work = eng.open_session("personal", "work")
    eng.store(work, "Desk", "The standing desk is in room 4.")
    receipt = eng.recall(work, "where is the garden hose?").receipt_id
    assert eng.explain(receipt)["counts"]["injected"] == 1
    eng.create_token("workview", "personal", ["work"])
    app = create_app(eng, {"port": 8765})
    app.test_client_class = Loopback
    with app.test_client() as web:
        sign_in(web, eng, "workview")
        listed = " ".join(web.get("/receipts").get_data(as_text=True).split())
        overview = " ".join(web.get("/").get_data(as_text=True).split())
        assert web.get(f"/receipts/{receipt}").status_code in (403, 404)  # refused, as before
    assert f'href="/receipts/{receipt}"' not in listed and f'href="/receipts/{receipt}"' not in overview
    assert "where is the garden hose?" in listed
    assert "this session's recall also reads boundary home, which your token may not see" in listed
    assert "not shown" in listed and "injected 1" not in overview
    assert "its recall also reads boundary home, which your token may not see" in overview


def test_a_search_is_sorted_as_chosen_and_best_match_first_by_default(server, browser, clock):
    """A walk searched, chose "most recalled", and nothing moved."""
    web, _ = browser
    eng = server.engine
    sid = eng.open_session("personal", "work")
    older = eng.store(sid, "Tea", "The user drinks green tea with lunch.").id
    clock.advance(60_000)
    exact = eng.store(sid, "Tea ritual", "Green tea, green tea, always green tea in the afternoon.").id
    with server.client() as api:  # the older one is recalled twice, in two sessions
        for _ in range(2):
            later = eng.open_session("personal", "work")
            api.post(f"/sessions/{later}/recall", json={"message": "what does the user drink with lunch?"})
    assert eng.memory(eng.scope(sid), older).extra["recalled_count"] == 2

    def order(**args):
        html = web.get("/memories", params={"q": "green tea", **args}, headers=HX).text
        return [m for m in re.findall(r'href="/memories/((?:doc|rec)-[0-9a-f]{32})"', html) if m in (older, exact)]

    best = order()
    assert set(best) == {older, exact}
    assert order(sort="most_recalled")[0] == older
    assert order(sort="newest")[0] == exact
    assert order(sort="best") == best
    page = web.get("/memories").text
    assert '<option value="best" selected>best match (newest when not searching)</option>' in page


def test_a_records_edit_is_offered_in_words_a_person_uses(server, browser):
    """A walk read "Supersede" on a record's page and did not know it was how to correct it."""
    web, _ = browser
    eng = server.engine
    rec = eng.store(eng.open_session("personal", "work"), "Trip", "Flew to Lisbon on 3 May.",
                    memory_class="evidence").id
    page = web.get(f"/memories/{rec}").text
    editor = web.get(f"/memories/{rec}/edit", headers=HX).text
    assert ">Correct</a>" in page and "Supersede" not in page
    assert ">Save as a new record</button>" in editor and "Supersede<" not in editor


def test_scoping_names_no_token_a_narrow_viewer_may_not_list(tmp_path, make_engine):
    """A walk signed in with a token for boundary work: the sessions table named the session's
    token by its raw id ("tok-3f…"), since the wider token that opened it is not listed to it."""
    from keepmind.webui.app import create_app
    from support.pages import Loopback

    eng = make_engine(tmp_path / "h")
    wide = eng.create_token("agent", "personal").secret
    eng.create_token("workview", "personal", ["work"])
    app = create_app(eng, {"port": 8765})
    app.test_client_class = Loopback
    with app.test_client() as web:
        r = web.post("/api/v1/sessions", json={"audience": "personal", "boundary": "work", "title": "Agent chat"},
                     headers={"Authorization": f"Bearer {wide}"})
        assert r.status_code == 200, r.get_data(as_text=True)
        local = eng.ensure_token(None).secret
        link = web.post("/api/v1/ui/links", json={"as": "workview"}, headers={"Authorization": f"Bearer {local}"})
        assert web.get(link.get_json()["url"].split("127.0.0.1:8765")[1]).status_code == 303
        page = " ".join(web.get("/scoping").get_data(as_text=True).split())
    shown = re.sub(r"<[^>]+>", " ", page)  # what the page says (an option's value is an id, not shown)
    assert "Agent chat" in shown
    assert "tok-" not in shown and "another token" in shown


def test_a_duplicate_is_merged_from_its_page_without_deleting_the_fact_as_wrong(server, browser):
    """A walk had two memories of one fact: "Delete as wrong" was the only way to drop one, and it
    tombstoned the true fact."""
    web, csrf = browser
    eng = server.engine
    sid = eng.open_session("personal", "work")
    kept = eng.store(sid, "Coffee", "The user drinks oat-milk flat whites every morning.").id
    same = eng.store(sid, "Coffee again", "The user drinks oat-milk flat whites.").id
    assert f'href="/memories/{same}/merge">Merge a duplicate…</a>' in web.get(f"/memories/{same}").text
    found = web.get(f"/memories/{same}/merge", params={"q": "flat whites"}).text
    assert f'name="into" value="{kept}"' in found and f'name="into" value="{same}"' not in found  # not itself
    asked = web.post(f"/memories/{same}/merge", data={"csrf_token": csrf, "into": kept}, headers=HX)
    said = " ".join(asked.text.split())
    assert "Merge “Coffee again” into “Coffee”?" in said and "deleted as a duplicate, not as wrong" in said
    assert {m.id for m in eng.list_memories(sid)} == {kept, same}  # asked first: nothing happened yet
    r = web.post(f"/memories/{same}/merge", data={"csrf_token": csrf, "into": kept, "confirmed": "yes"}, headers=HX)
    assert r.headers.get("HX-Redirect") == f"/memories/{kept}"
    assert [m.id for m in eng.list_memories(sid)] == [kept]
    assert eng.deleted()[0] == []  # no tombstone
    assert "No other living document of personal · work matches “zebra”" in web.get(
        f"/memories/{kept}/merge", params={"q": "zebra"}).text
