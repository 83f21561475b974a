"""The browser UI part 2's acceptance flows, each a person running Keepmind through a real served
instance in headless Chromium: pause, a dead letter and its retry, review before keeping, a
scoped token, a recall receipt with feedback, model upload, settings, export and import, quit."""

from __future__ import annotations

import io
import json
import zipfile

import httpx

from keepmind.engine import Relation
from keepmind.engine.models import manifest as manifests
from support.browser import SHOTS, hx_settle, sign_in
from support.provider import ScriptedProvider

CURATOR = "You curate a long-term memory"
FILES = ("model.onnx", "vocab.txt", "tokenizer.json")


def recall(live, sid: str, message: str, token: str | None = "default") -> dict:
    with live.client(token) as api:
        r = api.post(f"/sessions/{sid}/recall", json={"message": message})
    assert r.status_code == 200, r.text
    return r.json()


def test_pause_from_the_header_stops_recall_until_resumed_and_survives_a_restart(page, live, start_live, tmp_path):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Seat preference", "The user prefers window seats on flights.")
    assert recall(live, sid, "book a flight with a window seat")["items"]
    sign_in(page, live)
    page.goto(live.url + "/memories")
    page.get_by_role("button", name="Pause memory").click()
    page.get_by_text("Memory paused").wait_for()
    assert page.url == live.url + "/memories"  # back on the page the switch was pressed on
    answer = recall(live, sid, "book a flight with a window seat")
    assert answer["items"] == [] and answer["block"] is None and answer["degraded"] == ["memory_paused"]
    with live.client() as api:
        assert api.get("/status").json()["memory"]["status"] == "paused"
    page.get_by_role("button", name="Resume memory").click()
    page.get_by_role("button", name="Pause memory").wait_for()
    fresh = eng.open_session("personal", "work")  # recall injects a memory once per session
    assert recall(live, fresh, "book a flight with a window seat")["items"]
    page.get_by_role("button", name="Pause memory").click()
    page.get_by_role("button", name="Resume memory").wait_for()
    home = live.daemon.home
    live.stop()
    again = start_live(home)
    try:
        with again.client() as api:
            assert api.get("/status").json()["memory"]["status"] == "paused"
        assert recall(again, sid, "book a flight with a window seat")["degraded"] == ["memory_paused"]
        sign_in(page, again)
        assert page.get_by_role("button", name="Resume memory").is_visible()
    finally:
        again.stop()


def test_a_failing_checkpoint_dead_letters_and_a_retry_succeeds_while_the_list_updates_itself(page, start_live,
                                                                                              tmp_path):
    provider = ScriptedProvider().start()
    live = start_live(tmp_path / "home", start_workers=True, memory__llm__base_url=provider.base_url,
                      memory__llm__model="scripted-1", memory__llm__timeout_seconds=5,
                      memory__curation__max_attempts=2)
    try:
        eng = live.engine
        sid = eng.open_session("personal", "work", title="Laptop chat")
        eng.store(sid, "Laptop", "User's laptop is a ThinkPad X1 Carbon.", anchor="Laptop")
        # overloaded first (tried again after a back-off), then refused (dead at once: asked again,
        # it would answer the same)
        provider.script(CURATOR, ("status", 503, "overloaded"), ("status", 401, "invalid api key"))
        sign_in(page, live)
        with live.client() as api:
            queued = api.post(f"/sessions/{sid}/tools/store_memory",
                              json={"title": "Laptop", "content": "User's laptop has 32 GB of RAM."}).json()
        checkpoint = queued["result"]["checkpoint_id"]
        page.goto(live.url + "/checkpoints")
        page.evaluate("() => { window.__same_page = true; }")
        row = page.locator(f"#cp-{checkpoint}")
        failed = page.locator("section[aria-labelledby='sec-failed']")
        failed.wait_for(timeout=20_000)  # work in flight: the list follows it by itself
        assert "HTTP 503" in row.inner_text() and "next try" in row.inner_text()
        dead = page.locator("section[aria-labelledby='sec-dead']")
        dead.wait_for(timeout=30_000)  # after the backoff, the second attempt gives up
        assert "HTTP 401" in dead.inner_text() and "then retry" in dead.inner_text()
        assert page.locator("#backlog[data-polling]").count() == 0  # idle now: it stopped refreshing
        # a retry that fails again says so, and keeps saying so after the list refreshed itself
        provider.script(CURATOR, ("status", 401, "invalid api key"))
        dead.get_by_role("button", name="Retry Laptop").click()
        notice = page.locator("#backlog p.notice[role=status]")
        notice.get_by_text("Retried “Laptop”: it failed again and is a dead letter").wait_for(timeout=20_000)
        assert "HTTP 401" in notice.inner_text()
        provider.script(CURATOR, "CREATE")
        dead.get_by_role("button", name="Retry Laptop").click()
        page.locator("section[aria-labelledby='sec-completed']").get_by_text("32 GB of RAM").wait_for(timeout=20_000)
        notice.get_by_text("Retried “Laptop”: curated").wait_for(timeout=10_000)
        page.screenshot(path=str(SHOTS / "backlog-retried.png"))
        assert page.locator("section[aria-labelledby='sec-dead']").count() == 0
        assert page.evaluate("() => window.__same_page === true")  # no reload happened
        assert "32 GB" in eng.find(sid, "laptop RAM")[0].body
    finally:
        live.stop()
        provider.stop()


def test_review_holds_an_observed_proposal_until_it_is_edited_and_kept_and_a_rejected_one_stays_away(
        page, start_live, tmp_path, clock):
    live = start_live(tmp_path / "home", clock=clock, memory__curation__review=True)
    try:
        eng = live.engine
        sid = eng.open_session("personal", "work", title="Travel chat")
        eng.add_turn(sid, user="I usually fly out of Boston Logan.", assistant="Noted.")
        eng.add_turn(sid, user="I'm a Delta SkyMiles Gold member.", assistant="Great.")
        clock.advance(90_000)
        eng.writepath.scheduler.run_once(clock())
        assert eng.drain_checkpoints() == []  # they wait for a person
        sign_in(page, live)
        assert page.get_by_role("link", name="Review 2 waiting").is_visible()
        page.get_by_role("link", name="Review 2 waiting").click()
        airport = page.locator("[data-proposal]", has_text="Boston Logan")
        airport.get_by_role("link", name="Edit").click()
        page.get_by_label("Title").fill("Home airport")
        page.get_by_label("Text").fill("User flies out of Boston Logan (BOS), terminal A.")
        page.get_by_role("button", name="Save and keep").click()
        page.get_by_text("Kept as edited").wait_for()
        page.locator("[data-proposal]", has_text="SkyMiles").get_by_role("button", name="Reject").click()
        page.get_by_text("Rejected: it will not be proposed again").wait_for()
        assert page.get_by_text("Nothing waits for review.").is_visible()
        eng.drain_checkpoints()  # what the curation worker does
        page.goto(live.url + "/memories")
        assert page.get_by_role("link", name="Home airport").is_visible()
        assert page.get_by_text("terminal A").is_visible() and page.get_by_text("SkyMiles").count() == 0
        other = eng.open_session("personal", "work")
        eng.add_turn(other, user="I'm a Delta SkyMiles Gold member.", assistant="Noted.")
        clock.advance(90_000)
        eng.writepath.scheduler.run_once(clock())
        eng.drain_checkpoints()
        page.goto(live.url + "/review")
        assert page.get_by_text("Nothing waits for review.").is_visible()
        assert not any("SkyMiles" in m.body for m in eng.browse(eng.viewer(eng.get_token("local"))).items)
    finally:
        live.stop()


def test_a_team_token_is_shown_once_sees_only_its_boundary_and_is_refused_once_revoked(page, live):
    eng = live.engine
    eng.store(eng.open_session("personal", "work"), "Salary", "My salary is 123456 a year.")
    eng.store(eng.open_session("team", "work"), "Standup", "The team standup is at nine.", anchor="Standup")
    eng.store(eng.open_session("team", "home"), "Choir", "The home choir meets on Tuesdays.")
    sign_in(page, live)
    page.get_by_role("navigation", name="Run Keepmind").get_by_role("link", name="Scoping").click()
    form = page.locator("form.token-form")
    form.get_by_label("Name").fill("team-work")
    form.get_by_label("Ceiling").select_option("team")
    form.get_by_label("Boundaries").fill("work")
    form.get_by_role("button", name="Create token").click()
    secret = page.locator("#new-secret").inner_text().strip()
    assert len(secret) > 20 and "only now" in page.locator(".secret-card").inner_text()
    assert secret in page.locator("#snippet-mcp").inner_text()
    with httpx.Client(base_url=live.url + "/api/v1", headers={"Authorization": f"Bearer {secret}"}) as api:
        assert api.get("/status").status_code == 200
    page.goto(live.url + "/scoping")
    assert secret not in page.content()  # shown once
    page.get_by_label("Token", exact=True).select_option(label="team-work (team)")
    page.get_by_role("button", name="View as this token").click()
    view = page.locator(".view-as")
    view.wait_for()
    text = view.inner_text()
    assert "Standup" in text and "Salary" not in text and "123456" not in text and "Choir" not in text
    assert "personal" not in view.locator(".aud").all_inner_texts()
    page.get_by_role("button", name="Revoke team-work").click()
    dialog = page.get_by_role("dialog")
    assert "cannot be used again" in dialog.inner_text()
    assert api_status(live, secret) == 200  # asked, not yet revoked
    dialog.get_by_role("button", name="Revoke team-work").click()
    page.get_by_text("Revoked team-work").wait_for()
    assert "revoked" in page.locator("tr", has_text="team-work").inner_text()
    with httpx.Client(base_url=live.url + "/api/v1", headers={"Authorization": f"Bearer {secret}"}) as api:
        assert api.get("/status").status_code == 401


def test_a_receipt_that_injected_nothing_shows_every_score_and_feedback_is_counted(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work", title="Daily chat")
    eng.store(sid, "Anna lives in Lisbon", "The user's sister Anna lives in Lisbon; they visit her in May.")
    eng.store(sid, "Coffee", "The user drinks black coffee every morning.")
    nothing = recall(live, sid, "I like coffee shops in Berlin")
    assert nothing["items"] == []
    injected = recall(live, sid, "where does my sister Anna live?")
    assert [i["title"] for i in injected["items"]] == ["Anna lives in Lisbon"]
    sign_in(page, live)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Recalls").click()
    page.get_by_label("Injected").select_option("nothing")
    hx_settle(page)
    page.get_by_role("link", name="I like coffee shops in Berlin").click()
    table = page.locator("table.stages")
    row = table.locator("tr", has_text="Coffee")
    cells = row.locator("td").all_inner_texts()
    # lexical (marked * when found by words every memory of this small store holds), cosine (no vector:
    # recall is lexical here), fused, gate
    assert float(cells[2].rstrip("*")) >= 0 and cells[3] == "—" and float(cells[4]) > 0 and float(cells[6]) >= 0
    assert "dropped at the relevance gate" in cells[7] and "below" in cells[7]
    assert page.get_by_text("Nothing was injected").is_visible()
    page.goto(live.url + f"/receipts/{injected['receipt']}")
    page.get_by_role("button", name="Don't inject Anna lives in Lisbon here").click()
    page.get_by_text("marked: don't inject this here").wait_for()
    page.get_by_label("A memory that should have been recalled").fill("coffee")
    page.get_by_role("button", name="Find").click()
    page.get_by_role("button", name="Coffee should have been recalled").click()
    page.get_by_text("Marked “this should have been recalled”").wait_for()
    page.goto(live.url + "/receipts")
    counted = page.locator("#feedback-count").inner_text()
    assert "Feedback collected: 1 “don't inject this here” and 1 “this should have been recalled”" in counted
    assert eng.feedback_counts() == {"not_here": 1, "should_recall": 1}


def _zip(path, members: dict):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_model_upload_installs_a_good_zip_and_refuses_a_tampered_one_and_an_escaping_path(page, start_live,
                                                                                          tmp_path, tiny):
    home = tmp_path / "home"
    man = tiny.install_tiny(tmp_path / "src", "tiny-embed")
    manifests.save_custom(home / "models", man)  # known, not installed
    files = {n: (tmp_path / "src" / "tiny-embed" / n).read_bytes() for n in FILES}
    good = _zip(tmp_path / "tiny-embed.zip", {f"tiny/{n}": d for n, d in files.items()})
    tampered = _zip(tmp_path / "tampered.zip", {**{f"tiny/{n}": d for n, d in files.items()},
                                                "tiny/model.onnx": files["model.onnx"][:-1] + b"\x00"})
    escaping = _zip(tmp_path / "escape.zip", {"../x": b"x", **{f"tiny/{n}": d for n, d in files.items()}})
    live = start_live(home)
    try:
        sign_in(page, live)
        page.goto(live.url + "/models")
        row = page.locator("table.models tr", has_text="tiny-embed")
        assert "missing" in row.inner_text()

        def upload(path):
            page.get_by_label("Files").set_input_files(str(path))
            page.get_by_role("button", name="Upload and verify").click()
            page.wait_for_load_state("networkidle")

        upload(tampered)
        page.locator(".job.job-failed").first.wait_for(timeout=20_000)
        failure = page.locator(".job.job-failed").first.inner_text()
        assert "tiny/model.onnx in tampered.zip" in failure and "sha256" in failure
        assert sorted(p.name for p in (home / "models" / "tiny-embed").iterdir()) == ["manifest.json"]
        upload(escaping)
        error = page.get_by_role("alert").inner_text()
        assert "escape.zip" in error and "escapes" in error
        assert sorted(p.name for p in (home / "models" / "tiny-embed").iterdir()) == ["manifest.json"]
        upload(good)
        page.locator(".job.job-done").first.wait_for(timeout=20_000)
        page.locator("table.models tr", has_text="tiny-embed").get_by_text("verified").wait_for(timeout=10_000)
        assert sorted(p.name for p in (home / "models" / "tiny-embed").iterdir()) == sorted([*FILES, "manifest.json"])
        assert not any((home / "uploads").iterdir())  # nothing of any upload is left behind
    finally:
        live.stop()


def test_an_invalid_setting_names_the_key_and_the_allowed_values_and_a_valid_one_is_saved(page, live):
    sign_in(page, live)
    page.get_by_role("navigation", name="Run Keepmind").get_by_role("link", name="Settings").click()
    group = page.locator("#group-recall")
    group.get_by_label("memory.recall.max_items").fill("99")
    group.get_by_role("button", name="Save recall").click()
    alert = page.locator("#group-recall").get_by_role("alert")
    alert.wait_for()
    assert "memory.recall.max_items" in alert.inner_text() and "from 1 to 10" in alert.inner_text()
    assert not (live.daemon.home / "keepmind.json").exists()
    page.locator("#group-recall").get_by_label("memory.recall.max_items").fill("4")
    page.locator("#group-recall").get_by_role("button", name="Save recall").click()
    page.locator("#group-recall").get_by_text("Applied at once: memory.recall.max_items").wait_for()
    saved = json.loads((live.daemon.home / "keepmind.json").read_text())
    assert saved == {"memory.recall.max_items": 4} and live.engine.settings["memory.recall.max_items"] == 4
    page.reload()
    assert page.locator("#group-recall").get_by_label("memory.recall.max_items").input_value() == "4"


def test_an_export_imported_into_an_empty_home_from_the_page_gives_the_same_memories(page, live, start_live,
                                                                                       tmp_path, clock):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Anna", "Anna lives in Lisbon.", anchor="Anna", relations=[Relation("lives_in", "Lisbon", "place")])
    seat = eng.store(sid, "Seat", "The user prefers window seats.").id
    eng.update(sid, seat, old_text="window seats", new_text="window seats, never the last row")
    eng.store(eng.open_session("team", "home"), "Choir", "The choir meets on Tuesdays.", memory_class="evidence")
    sign_in(page, live)
    page.goto(live.url + "/transfer")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the export").click()
    exported = tmp_path / download.value.suggested_filename
    download.value.save_as(exported)
    assert exported.suffix == ".jsonl"
    empty = start_live(tmp_path / "empty", clock=clock)
    try:
        sign_in(page, empty)
        page.goto(empty.url + "/transfer")
        page.get_by_label("File", exact=True).set_input_files(str(exported))
        page.get_by_role("button", name="Preview the import").click()
        preview = page.locator("#preview")
        assert "Memories" in preview.inner_text() and "Anna" in preview.inner_text()
        assert empty.engine.browse(empty.engine.viewer(empty.engine.get_token("local"))).items == []
        preview.get_by_role("button", name="Import 3 memories").click()
        page.get_by_text("3 imported from").wait_for()

        def memories(e):
            return sorted((m.title, m.body, m.audience, m.boundary, m.memory_class)
                          for m in e.browse(e.viewer(e.get_token("local"))).items)

        assert memories(empty.engine) == memories(eng)
        page.goto(empty.url + "/memories")
        assert page.get_by_role("link", name="Anna").is_visible()
    finally:
        empty.stop()


def test_quit_tells_the_running_keepmind_to_stop(page, live):
    sign_in(page, live)
    page.get_by_role("link", name="Quit Keepmind").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_role("button", name="Quit Keepmind").click()
    page.get_by_role("heading", name="Keepmind is stopping").wait_for()
    assert live.quit_requested.is_set()


def test_a_memory_zip_of_an_openclaw_folder_previews_then_imports(page, live, tmp_path):
    folder = io.BytesIO()
    with zipfile.ZipFile(folder, "w") as zf:
        zf.writestr("workspace/MEMORY.md", "# Preferences\n\n- I like green tea.\n- I work from Porto.\n")
        zf.writestr("workspace/memory/2026-03-02.md", "- Met Bruno about the release.\n")
    path = tmp_path / "workspace.zip"
    path.write_bytes(folder.getvalue())
    sign_in(page, live)
    page.goto(live.url + "/transfer")
    page.get_by_label("File", exact=True).set_input_files(str(path))
    page.get_by_label("Boundary", exact=True).fill("notes")
    page.get_by_role("button", name="Preview the import").click()
    preview = page.locator("#preview")
    assert "green tea" in preview.inner_text() and "notes" in preview.inner_text()
    preview.get_by_role("button", name="Import 3 memories").click()
    page.get_by_text("3 imported from workspace.zip").wait_for()
    page.go_back()  # to the preview, a GET after a redirect: no "Confirm Form Resubmission", no second import
    page.get_by_text("workspace.zip was imported already").wait_for()
    assert len(live.engine.browse(live.engine.viewer(live.engine.get_token("local"))).items) == 3


def api_status(live, secret: str) -> int:
    return httpx.get(live.url + "/api/v1/status", headers={"Authorization": f"Bearer {secret}"}).status_code
