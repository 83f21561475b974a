"""Every page passes axe-core (no serious or critical violation), in light and dark, at a laptop
width and in a narrow window (screenshots go to .cache/screenshots/), and its main actions are
reachable with the keyboard alone."""

from __future__ import annotations

import pytest

from keepmind.engine import Relation
from keepmind.engine.clock import DAY_MS, HOUR_MS
from support.browser import check_axe, hx_settle, shoot, sign_in


@pytest.fixture
def store(live, clock):
    """A store a person would have after a few weeks: a conversation, facts, a graph that changed,
    a correction, a deletion and some recalls."""
    eng = live.engine
    sid = eng.open_session("personal", "work", title="Planning the Lisbon trip")
    eng.add_turn(sid, user="My sister Anna lives in Lisbon, we visit her in May.", assistant="Lovely. Shall I note it?")
    eng.add_turn(sid, user="Yes. I prefer window seats on flights.", assistant="Noted: window seats.")
    anna = eng.store(sid, "Anna lives in Lisbon", "The user's sister Anna lives in Lisbon; they visit her in May.",
                     anchor="Anna", anchor_type="person", source="observer",
                     provenance={"session_id": sid, "turns": [1]},
                     relations=[Relation("lives_in", "Lisbon", "place"), Relation("sister_of", "User", "person")]).id
    seat = eng.store(sid, "Seat preference", "The user prefers window seats on flights.", anchor="Flights",
                     anchor_type="preference", source="observer", provenance={"session_id": sid, "turns": [2]}).id
    eng.update(sid, seat, old_text="window seats", new_text="window seats, never the last row")
    clock.advance(12 * DAY_MS)
    eng.store(sid, "Anna moved", "Anna moved from Lisbon to Porto in January.", anchor="Anna", anchor_type="person",
              relations=[Relation("lives_in", "Porto", "place")])
    team = eng.open_session("team", "work", title="Team sync")
    eng.store(team, "Release day", "The team ships on Fridays after the standup.", anchor="Release",
              anchor_type="workflow", relations=[Relation("owned_by", "Platform team", "org")])
    eng.store(sid, "Hotel booked", "Booked the Hotel Avenida for 12-15 May.", memory_class="evidence")
    wrong = eng.store(sid, "Wrong fact", "The user hates coffee.").id
    eng.update(sid, wrong, delete=True, source="ui")
    clock.advance(HOUR_MS)
    for message in ("where does my sister Anna live?", "book me a flight with a window seat"):
        eng.explain(eng.recall(eng.open_session("personal", "work"), message).receipt_id)
    return {"anna": anna, "seat": seat, "anna_anchor": next(
        a.id for a in eng.anchors(eng.viewer(eng.get_token("local"))) if a.name == "Anna")}


def visit(page, url: str, name: str, shots: list) -> None:
    page.console_errors.clear()
    response = page.goto(url)
    page.wait_for_load_state("networkidle")
    check_axe(page, name)
    shots += shoot(page, name)
    errors = [e for e in page.console_errors if not (response.status == 404 and "404" in e)]  # the page's own 404
    assert errors == [], f"{name}: {errors}"  # no CSP violation, no failed asset


def test_every_page_is_accessible_in_light_and_dark_at_both_widths(page, live, store):
    shots: list = []
    visit(page, live.url + "/login", "login", shots)
    sign_in(page, live)
    receipt = live.engine.receipts(limit=1)[0]["receipt_id"]
    for url, name in (
        ("/", "overview"),
        ("/memories", "memories"),
        ("/memories?q=Anna+Lisbon", "memories-search"),
        ("/memories?sort=most_recalled&class=durable_fact", "memories-sorted"),
        (f"/memories/{store['seat']}", "memory"),
        (f"/memories/{store['anna']}", "memory-provenance"),
        (f"/memories/{store['seat']}/edit", "memory-edit"),
        (f"/memories/{store['anna']}/merge?q=Anna", "memory-merge"),
        ("/memories/new", "memory-new"),
        ("/memories?deleted=1", "deleted"),
        ("/anchors", "anchors"),
        (f"/anchors/{store['anna_anchor']}", "anchor"),
        (f"/anchors/{store['anna_anchor']}?as_of=2026-01-05", "anchor-as-of"),
        (f"/anchors/{store['anna_anchor']}/graph?depth=2", "anchor-graph"),
        (f"/recalls/{receipt}", "recall"),
        ("/memories/doc-" + "0" * 32, "not-found"),
    ):
        visit(page, live.url + url, name, shots)
    page.goto(live.url + f"/memories/{store['seat']}")
    page.get_by_role("link", name="Delete as wrong…").click()
    page.get_by_role("dialog").wait_for()
    check_axe(page, "delete dialog")
    shots += shoot(page, "delete-dialog")
    assert page.evaluate("document.activeElement.textContent") == "Cancel"  # Enter does not delete at once
    page.goto(live.url + f"/memories/{store['anna']}/merge?q=Anna")
    page.get_by_role("button", name="Merge into this…").first.click()
    page.get_by_role("dialog").wait_for()
    check_axe(page, "merge dialog")
    shots += shoot(page, "merge-dialog")
    assert page.evaluate("document.activeElement.textContent") == "Cancel"
    page.goto(live.url + "/memories")
    page.get_by_label("Select Release day").check()  # a team memory: a personal one has nothing to narrow
    page.get_by_role("button", name="Make personal").click()
    page.get_by_role("dialog").wait_for()
    check_axe(page, "narrow dialog")
    shots += shoot(page, "narrow-dialog")
    assert len(shots) == 4 * 20 and all(p.stat().st_size > 5_000 for p in shots)


FOCUSED_NAME = """() => {
  const e = document.activeElement;
  const label = e.getAttribute('aria-label') || (e.labels && e.labels.length ? e.labels[0].innerText : '')
    || e.innerText || e.value || '';
  return label.trim();
}"""


def tab_to(page, accessible: str, limit: int = 80) -> None:
    """Press Tab until the focused element is named `accessible`."""
    seen = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        label = page.evaluate(FOCUSED_NAME)
        seen.append(label)
        if label == accessible:
            return
    raise AssertionError(f"{accessible!r} is not reachable with Tab; reached: {seen}")


def test_every_main_action_is_reachable_with_the_keyboard(page, live, store):
    sign_in(page, live)
    page.goto(live.url + "/memories")
    for action in ("Search memories", "Search", "Select all", "Delete as wrong…", "Make personal", "Seat preference"):
        tab_to(page, action)
    page.keyboard.press("Enter")  # open the focused memory
    page.wait_for_url("**/memories/doc-*")
    for action in ("Edit", "Delete as wrong…", "Revert to 1", "Compare"):
        tab_to(page, action)
    page.goto(live.url + f"/memories/{store['seat']}")
    tab_to(page, "Delete as wrong…")
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    page.keyboard.press("Escape")  # a dialog closes with Escape; nothing was deleted
    dialog.wait_for(state="detached")
    assert live.engine.get(live.engine.open_session("personal", "work"), [store["seat"]]).items
    tab_to(page, "Edit")
    page.keyboard.press("Enter")
    hx_settle(page)
    assert page.evaluate(FOCUSED_NAME) == "Text"  # the editor takes the focus: typing goes into the text
    page.keyboard.press("Escape")  # unchanged: Escape is Cancel
    page.wait_for_url(f"**/memories/{store['seat']}")
    page.locator(".memory .body").wait_for()
    assert page.locator("#content").count() == 0
    tab_to(page, "Edit")
    page.keyboard.press("Enter")
    hx_settle(page)
    page.keyboard.type(" Typed")
    asked = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.keyboard.press("Escape")  # typed: it asks first, and staying keeps what was typed
    assert asked == ["Discard what you typed?"]
    assert page.locator("#content").input_value().endswith(" Typed")  # the caret was after the text
    tab_to(page, "Find and replace")
    tab_to(page, "Save")
    page.goto(live.url + f"/anchors/{store['anna_anchor']}")
    for action in ("As of", "Lisbon (place)", "Rename", "Merge into it…"):
        tab_to(page, action)
    page.goto(live.url + "/memories?deleted=1")
    tab_to(page, "Restore Wrong fact")
