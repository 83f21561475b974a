"""What a walk through the pages found, fixed, in headless Chromium against a real server: a merge
asks first (and says so when the types differ), the backlog's refresh leaves the keyboard where it
is, a settings answer stands by the field or the button the person is at, and an injected
candidate's row at 390 px is one block of colour."""

from __future__ import annotations

import io

import numpy
from PIL import Image

from keepmind.engine.writepath import checkpoints
from support.browser import NARROW, SHOTS, hx_settle, sign_in

OWNER = "test:1:walk"
FOCUSED_NAME = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return 'BODY';
  return (e.getAttribute('aria-label') || e.id || e.innerText || '').trim();
}"""


def tab_to(page, name: str, limit: int = 80) -> None:
    seen = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        seen.append(page.evaluate(FOCUSED_NAME))
        if seen[-1] == name:
            return
    raise AssertionError(f"{name!r} is not reachable with Tab; reached: {seen}")


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"walk-{name}.png"))


def test_a_merge_asks_first_and_a_merge_across_types_says_so(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Anna and tea", "Anna drinks green tea.", anchor="Anna", anchor_type="person")
    eng.store(sid, "Bob plays chess", "Bob plays chess on Sundays.", anchor="Bob", anchor_type="person")
    eng.store(sid, "Rex the dog", "Rex is the family's dog.", anchor="Rex", anchor_type="pet")
    sign_in(page, live)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Anchors").click()
    page.get_by_role("link", name="Anna", exact=True).click()
    anna_url = page.url
    hx_settle(page)
    page.get_by_label("Same thing as").select_option(label="Rex (pet, not person)")
    page.get_by_role("button", name="Merge into it").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    assert dialog.get_by_role("heading").inner_text() == "Merge a person into a pet?"
    assert "its page can undo this merge" in dialog.inner_text()
    assert page.evaluate(FOCUSED_NAME) == "Cancel"  # the safe answer has the focus
    shot(page, "merge-across-types")
    page.keyboard.press("Enter")
    dialog.wait_for(state="detached")
    assert page.url == anna_url and page.get_by_role("heading", name="Anna", exact=True).is_visible()
    page.get_by_label("Same thing as").select_option(label="Bob (person)")
    page.get_by_role("button", name="Merge into it").click()
    dialog.wait_for()
    assert dialog.get_by_role("heading").inner_text() == "Merge “Anna” into “Bob”?"
    shot(page, "merge-same-type")
    dialog.get_by_role("button", name="Merge", exact=True).click()
    page.wait_for_function("() => document.querySelector('h1').textContent === 'Bob'")
    assert page.get_by_text("Also known as Anna").is_visible()
    shot(page, "merged-with-undo")
    page.get_by_role("button", name="Undo this merge").click()  # a slip undone: Anna's page again
    page.wait_for_function("() => document.querySelector('h1').textContent === 'Anna'")
    assert page.get_by_role("link", name="Anna and tea").is_visible()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Anchors").click()
    assert page.get_by_role("link", name="Bob", exact=True).is_visible()


def test_the_backlog_refreshing_itself_leaves_the_focus_on_retry(page, live, clock):
    eng = live.engine
    sid = eng.open_session("personal", "work", title="Trip")
    failing = eng.store_memory(sid, "Train", "The user takes the 8:15 train.")
    eng.write(checkpoints.lease_next, OWNER, clock(), 60_000)
    eng.write(checkpoints.fail, failing.checkpoint_id, OWNER, "curator LLM timeout: no reply within 60 s", clock(),
              max_attempts=5)
    eng.store_memory(sid, "Waiting", "A proposal still waiting its turn.")
    polls = []
    page.on("request", lambda r: polls.append(r.url) if r.url.endswith("/checkpoints") and r.method == "GET"
            and r.headers.get("hx-request") == "true" else None)
    sign_in(page, live)
    page.goto(live.url + "/checkpoints")
    assert page.locator("#backlog[data-polling]").count() == 1  # work in flight: it refreshes itself
    hx_settle(page)
    page.evaluate("() => { window.__list = document.getElementById('backlog'); }")
    tab_to(page, "Retry Train")
    page.wait_for_timeout(5_000)  # more than two refreshes
    assert page.evaluate(FOCUSED_NAME) == "Retry Train"
    assert page.evaluate("() => document.getElementById('backlog') === window.__list")  # not swapped under it
    shot(page, "backlog-focus-kept")
    # the focus gone from the list, it refreshes again
    page.evaluate("() => document.activeElement.blur()")
    page.wait_for_function("() => document.getElementById('backlog') !== window.__list", timeout=10_000)
    assert polls, "the list never asked for itself again"


def in_view(page, selector: str) -> bool:
    return page.evaluate("""(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight; }""", selector)


def test_a_settings_answer_stands_by_the_field_or_button_and_takes_the_focus(page, live):
    sign_in(page, live)
    page.goto(live.url + "/settings")
    hx_settle(page)
    group = page.locator("#group-recall")
    group.get_by_label("memory.recall.max_items").fill("99")
    group.get_by_label("memory.recall.receipt_retention_days").fill("-5")
    group.get_by_role("button", name="Save recall").click()
    error = page.locator("#group-recall [id='e-memory.recall.max_items']")
    error.wait_for()
    hx_settle(page)
    assert page.locator("#group-recall .field-error").count() == 2  # both bad values, each at its field
    assert "receipt_retention_days" in page.locator("#group-recall [id='e-memory.recall.receipt_retention_days']"
                                                    ).inner_text()
    assert page.evaluate("() => document.activeElement.id") == "f-memory.recall.max_items"  # the first
    assert "memory.recall.max_items" in error.inner_text() and "Nothing in Recall was saved." in error.inner_text()
    assert in_view(page, "#group-recall [id='e-memory.recall.max_items']")
    shot(page, "settings-error-at-field")
    page.locator("#group-recall").get_by_label("memory.recall.max_items").fill("4")
    page.locator("#group-recall").get_by_label("memory.recall.receipt_retention_days").fill("14")
    page.locator("#group-recall").get_by_role("button", name="Save recall").click()
    saved = page.locator("#group-recall .actions").get_by_role("status")
    saved.get_by_text("Saved.").wait_for()
    hx_settle(page)
    assert page.evaluate("() => document.activeElement.id") == "save-recall"
    assert in_view(page, "#group-recall .actions [role=status]")
    shot(page, "settings-saved-at-button")
    assert live.engine.settings["memory.recall.max_items"] == 4


def test_an_injected_candidates_row_is_one_block_of_colour_at_390_px(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work", title="Daily chat")
    eng.store(sid, "Anna lives in Lisbon", "The user's sister Anna lives in Lisbon; they visit her in May.")
    injected = eng.recall(eng.open_session("personal", "work"), "where does my sister Anna live?")
    assert injected.items
    sign_in(page, live)
    page.set_viewport_size(NARROW)
    page.goto(live.url + f"/receipts/{injected.receipt_id}")
    row = page.locator("table.stages tr.fate-injected").first
    row.scroll_into_view_if_needed()
    box = row.bounding_box()
    shot(page, "receipt-injected-row-narrow")
    clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": box["height"] - 1}  # its border apart
    picture = Image.open(io.BytesIO(page.screenshot(clip=clip))).convert("RGB")
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    page_rgb = tuple(int(v) for v in background[background.index("(") + 1:-1].split(",")[:3])
    gaps = int((numpy.asarray(picture) == numpy.array(page_rgb, dtype=numpy.uint8)).all(axis=2).sum())
    assert gaps == 0, f"{gaps} pixels of the page's background inside the injected row"
