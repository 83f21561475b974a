"""The pages that run Keepmind, in every state they can be in (empty, busy, error): axe-core finds
no serious or critical violation in light and dark at a laptop width and in a narrow window
(screenshots go to .cache/screenshots/), and their actions are reachable with the keyboard alone."""

from __future__ import annotations

import threading
import zipfile

import pytest

from keepmind.engine import EngineError
from keepmind.engine.clock import HOUR_MS
from keepmind.engine.writepath import checkpoints
from support.browser import LAPTOP, NARROW, check_axe, dialog_settled, hx_settle, shoot, sign_in

OWNER = "browser-test:1:x"


def visit(page, url: str, name: str, shots: list) -> None:
    page.console_errors.clear()
    page.goto(url)
    page.wait_for_load_state("networkidle")
    here(page, name, shots)


def here(page, name: str, shots: list) -> None:
    """Check and photograph the page as it is now (after an action)."""
    hx_settle(page)
    check_axe(page, name)
    page.set_viewport_size(NARROW)  # a phone-width window never scrolls sideways
    wide = page.evaluate("document.documentElement.scrollWidth")
    page.set_viewport_size(LAPTOP)
    shots += shoot(page, name)
    assert wide <= NARROW["width"], f"{name}: {wide} px wide in a {NARROW['width']} px window"
    assert [e for e in page.console_errors if "422" not in e and "Failed to load resource" not in e] == [], name


@pytest.fixture
def busy(start_live, tmp_path, clock):
    """A Keepmind at work: every checkpoint state, proposals waiting for review, tokens, recalls with
    feedback, a model job running and one failed, a dead letter doctor warns about."""
    live = start_live(tmp_path / "home", clock=clock, memory__curation__review=True)
    eng = live.engine
    sid = eng.open_session("personal", "work", title="Planning the Lisbon trip")
    team = eng.open_session("team", "work", title="Team sync")
    eng.store(sid, "Anna lives in Lisbon", "The user's sister Anna lives in Lisbon; they visit her in May.",
              anchor="Anna")
    eng.store(sid, "Coffee", "The user drinks black coffee every morning.")
    eng.store(team, "Release day", "The team ships on Fridays after the standup.", anchor="Release")
    for user in ("I usually fly out of Boston Logan.", "I'm a Delta SkyMiles Gold member.",
                 "I prefer aisle seats on long flights."):
        eng.add_turn(sid, user=user, assistant="Noted.")
    clock.advance(90_000)
    eng.writepath.scheduler.run_once(clock())  # three proposals wait for review
    done = eng.store_memory(sid, "Editor", "The user edits in Helix.")
    eng.drain_checkpoints()
    assert eng.checkpoint(done.checkpoint_id)["status"] == "completed"
    dropped = eng.store_memory(sid, "Scratch", "A note the person threw away.")
    eng.discard_checkpoint(dropped.checkpoint_id)
    dead = eng.store_memory(team, "Laptop", "The team laptops have 32 GB of RAM.")
    eng.write(checkpoints.lease_next, OWNER, clock(), 60_000)
    eng.write(checkpoints.fail, dead.checkpoint_id, OWNER, "curator LLM http: HTTP 401: invalid api key", clock(),
              max_attempts=5, permanent=True)
    failing = eng.store_memory(sid, "Train", "The user takes the 8:15 train.")
    eng.write(checkpoints.lease_next, OWNER, clock(), 60_000)
    eng.write(checkpoints.fail, failing.checkpoint_id, OWNER, "curator LLM timeout: no reply within 60 s", clock(),
              max_attempts=5)
    eng.store_memory(sid, "Held", "A proposal curation holds right now.")
    eng.write(checkpoints.lease_next, OWNER, clock(), 60_000)
    eng.store_memory(sid, "Waiting", "A proposal still waiting its turn.")
    eng.create_token("team-work", "team", ["work"])
    nothing = eng.recall(eng.open_session("personal", "work"), "I like coffee shops in Berlin").receipt_id
    injected = eng.recall(eng.open_session("personal", "work"), "where does my sister Anna live?")
    eng.label_recall(injected.receipt_id, injected.items[0].id, "not_here")
    gate = threading.Event()

    def downloading(progress):
        progress(3, 8, "onnx/model.onnx")
        gate.wait(60)
        return "done"

    def broken(progress):
        raise EngineError("pack.zip does not verify against the tiny-embed manifest: tiny/model.onnx in pack.zip "
                          "has sha256 0f3a…, expected 9c1d…. Nothing was installed: get an untampered copy")

    failed = eng.jobs.start("model-import", "Importing uploaded model files", broken)
    eng.jobs.wait(failed.id, 5)
    eng.jobs.start("model-download", "Downloading snowflake-arctic-embed-m-int8", downloading)
    clock.advance(HOUR_MS)
    yield live, {"nothing": nothing, "injected": injected.receipt_id}
    gate.set()
    live.stop()


def test_every_page_in_its_busy_state_is_accessible_in_light_and_dark_at_both_widths(page, busy, tmp_path):
    live, ids = busy
    shots: list = []
    sign_in(page, live)
    for url, name in (
        ("/checkpoints", "backlog-busy"),
        ("/review", "review-busy"),
        ("/scoping", "scoping"),
        ("/scoping/view?audience=team&boundary=work", "scoping-view-as"),
        ("/receipts", "receipts"),
        ("/receipts?injected=no", "receipts-filtered"),
        (f"/receipts/{ids['nothing']}", "receipt-nothing-injected"),
        (f"/receipts/{ids['injected']}", "receipt-injected"),
        (f"/receipts/{ids['injected']}/pick?q=coffee", "receipt-pick"),
        ("/models", "models-busy"),
        ("/doctor", "doctor-warnings"),
        ("/settings", "settings"),
        ("/transfer", "transfer"),
        ("/", "overview-with-review-waiting"),
    ):
        visit(page, live.url + url, name, shots)
    page.goto(live.url + "/review")
    page.locator("[data-proposal]").first.get_by_role("link", name="Edit").click()
    page.get_by_role("button", name="Save and keep").wait_for()
    here(page, "review-editing", shots)
    page.get_by_label("Text").fill("")
    page.get_by_role("button", name="Save and keep").click()
    page.get_by_role("alert").wait_for()
    here(page, "review-error", shots)
    page.goto(live.url + "/scoping")
    form = page.locator("form.token-form")
    form.get_by_label("Name").fill("laptop-agent")
    form.get_by_role("button", name="Create token").click()
    page.locator(".secret-card").wait_for()
    here(page, "scoping-token-created", shots)
    form = page.locator("form.token-form")
    form.get_by_label("Name").fill("team-work")  # taken
    form.get_by_role("button", name="Create token").click()
    page.locator("#tokens-body").get_by_role("alert").wait_for()
    here(page, "scoping-token-error", shots)
    page.goto(live.url + "/settings")
    page.locator("#group-recall").get_by_label("memory.recall.max_items").fill("lots")
    page.locator("#group-recall").get_by_role("button", name="Save recall").click()
    page.locator("#group-recall").get_by_role("alert").wait_for()
    here(page, "settings-error", shots)
    page.locator("#group-curation-llm").get_by_role("button", name="Test the connection").click()
    page.locator("#llm-test-result .notice").wait_for()
    here(page, "settings-llm-test", shots)
    page.goto(live.url + "/models")
    bad = tmp_path / "escape.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../x", b"x")
    page.get_by_label("Files").set_input_files(str(bad))
    page.get_by_role("button", name="Upload and verify").click()
    page.get_by_role("alert").wait_for()
    here(page, "models-upload-refused", shots)
    page.goto(live.url + "/transfer")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"type": "header", "format": "keepmind-export", "version": 1}\nnot json\n'
                      '{"type": "document", "document_id": "doc-1"}\n')
    page.get_by_label("File", exact=True).set_input_files(str(broken))
    page.get_by_role("button", name="Preview the import").click()
    page.locator("#preview").wait_for()
    here(page, "transfer-preview-errors", shots)
    page.goto(live.url + "/transfer")
    good = tmp_path / "MEMORY.md"
    good.write_text("# Preferences\n\n- I like green tea.\n- I work from Porto.\n")
    page.get_by_label("File", exact=True).set_input_files(str(good))
    page.get_by_role("button", name="Preview the import").click()
    page.locator("#preview").wait_for()
    here(page, "transfer-preview", shots)
    page.get_by_role("button", name="Pause memory").click()
    page.get_by_text("Memory paused").wait_for()
    here(page, "header-paused", shots)
    page.get_by_role("link", name="Quit Keepmind").click()
    page.get_by_role("dialog").wait_for()
    here(page, "quit-dialog", shots)
    page.get_by_role("dialog").get_by_role("button", name="Quit Keepmind").click()
    page.get_by_role("heading", name="Keepmind is stopping").wait_for()
    here(page, "stopped", shots)
    assert len(shots) == 4 * 26 and all(p.stat().st_size > 5_000 for p in shots)


def test_every_page_in_its_empty_state_is_accessible(page, live):
    shots: list = []
    sign_in(page, live)
    for url, name in (("/checkpoints", "backlog-empty"), ("/review", "review-empty"), ("/receipts", "receipts-empty"),
                      ("/models", "models-empty"), ("/doctor", "doctor"), ("/scoping", "scoping-empty")):
        visit(page, live.url + url, name, shots)
    assert page.get_by_role("link", name="Doctor").is_visible()
    assert len(shots) == 4 * 6


def test_a_team_token_sees_only_its_own_operations_and_never_the_whole_store_pages(page, busy):
    live, _ = busy
    live.make_token("teamview", "team", ["work"])
    sign_in(page, live, as_token="teamview")
    assert page.get_by_role("button", name="Pause memory").count() == 0
    assert page.get_by_role("link", name="Quit Keepmind").count() == 0
    page.goto(live.url + "/checkpoints")
    text = page.locator("main").inner_text()
    assert "Laptop" in text and "Editor" not in text and "Train" not in text  # team's only
    for path in ("/models", "/settings", "/doctor", "/transfer"):
        assert page.goto(live.url + path).status == 403, path


FOCUSED_NAME = """() => {
  const e = document.activeElement;
  const label = e.getAttribute('aria-label') || (e.labels && e.labels.length ? e.labels[0].innerText : '')
    || e.innerText || e.value || '';
  return label.trim();
}"""


def tab_to(page, accessible: str, limit: int = 120) -> None:
    seen = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        label = page.evaluate(FOCUSED_NAME)
        seen.append(label)
        if label == accessible:
            return
    raise AssertionError(f"{accessible!r} is not reachable with Tab; reached: {seen}")


def test_the_actions_that_run_keepmind_are_reachable_with_the_keyboard(page, busy):
    live, ids = busy
    sign_in(page, live)
    page.goto(live.url + "/checkpoints")
    for action in ("Backlog", "Pause memory", "Quit Keepmind", "Retry Laptop", "Discard Laptop"):
        tab_to(page, action)
    page.keyboard.press("Enter")  # discard the dead letter: it asks first, with the focus on Cancel
    dialog = page.get_by_role("dialog")
    dialog.get_by_role("button", name="Cancel").wait_for()
    dialog_settled(page)
    assert page.evaluate("document.activeElement.textContent") == "Cancel"
    assert dialog.get_by_role("heading").inner_text().startswith("Discard “")  # it names the proposal
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.textContent") == "Discard"
    page.keyboard.press("Enter")
    page.get_by_text("Discarded: it will not be curated").wait_for()
    page.goto(live.url + "/review")
    page.keyboard.press("j")  # the first proposal
    page.keyboard.press("a")  # keep it
    page.get_by_text("Kept: curation forms the memory now.").wait_for()
    hx_settle(page)
    page.keyboard.press("j")
    page.keyboard.press("r")  # reject the next one
    page.get_by_text("Rejected: it will not be proposed again").wait_for()
    hx_settle(page)
    page.keyboard.press("e")  # edit the last one
    page.get_by_label("Title").wait_for()
    hx_settle(page)
    page.keyboard.press("Escape")  # nothing typed: Escape is Cancel (it did nothing here)
    page.get_by_label("Title").wait_for(state="detached")
    hx_settle(page)
    page.keyboard.press("j")
    page.keyboard.press("e")
    page.get_by_label("Title").wait_for()
    hx_settle(page)
    assert page.evaluate("() => document.activeElement.name") == "title"
    assert page.get_by_label("Title").input_value() and page.get_by_label("Text").input_value()  # the proposal's
    page.keyboard.type(" (edited)")
    page.keyboard.press("Enter")
    page.get_by_text("Kept as edited").wait_for()
    assert live.engine.review_queue() == []
    page.goto(live.url + "/scoping")
    for action in ("View as this session", "View as this token", "Revoke team-work", "Create token"):
        tab_to(page, action)
    page.goto(live.url + f"/receipts/{ids['injected']}")
    for action in ("Find",):
        tab_to(page, action)
    page.goto(live.url + "/models")
    for action in ("Files", "Upload and verify", "Install the offline pack", "Verify all"):
        tab_to(page, action)
    page.goto(live.url + "/settings")
    tab_to(page, "Save Memory")
    page.goto(live.url + "/transfer")
    for action in ("Download the export", "File", "Preview the import"):
        tab_to(page, action)
