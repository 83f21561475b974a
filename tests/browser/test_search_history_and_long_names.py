"""What a person found in the browser: one search is one step back, a long unbroken name stays
inside the window, the graph can be read in a narrow one, and a title too long for the form is
refused in words instead of cut short by the browser."""

from __future__ import annotations

import pytest

from keepmind.engine import Relation
from support.browser import LAPTOP, NARROW, SHOTS, check_axe, hx_settle, sign_in

# Unbroken, and wide letters: long enough to run past a laptop window in a heading or a meta line.
LONG = "W" * 150

# What runs past the window, or out of its own box (for the assertion's message).
SPILL = """() => [...document.querySelectorAll('main *')].filter(e =>
    (e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 || e.scrollWidth > e.clientWidth + 1)
    && e.tagName !== 'INPUT' && !e.closest('.table-wrap, .graph-box, svg')
).slice(0, 8).map(e => e.tagName + '.' + e.className + ': ' + e.textContent.trim().slice(0, 30))"""


@pytest.mark.parametrize("where, search_label, name", [
    ("/memories", "Search memories", "Anna lives in Lisbon"),
    ("/anchors", "Search anchors", "Anna"),
])
def test_back_leaves_a_search_in_one_press(page, live, where, search_label, name):
    sid = live.engine.open_session("personal", "work")
    live.engine.store(sid, "Anna lives in Lisbon", "The user's sister Anna lives in Lisbon.", anchor="Anna",
                      anchor_type="person")
    live.engine.store(sid, "Seat preference", "The user prefers window seats.", anchor="Flights")
    sign_in(page, live)
    page.goto(live.url + where)
    hx_settle(page)
    box = page.get_by_label(search_label)
    box.press_sequentially("Anna", delay=120)  # as a person types: keyup, then Enter (change, submit)
    box.press("Enter")
    hx_settle(page)
    page.wait_for_timeout(600)  # past the search box's keyup delay
    hx_settle(page)
    assert page.url.startswith(f"{live.url}{where}?q=Anna")
    assert page.get_by_role("link", name=name).is_visible()

    page.go_back()
    page.wait_for_url(live.url + "/")
    assert page.url == live.url + "/"


def test_a_filter_of_receipts_is_no_step_back_either(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Anna lives in Lisbon", "The user's sister Anna lives in Lisbon.")
    eng.explain(eng.recall(sid, "where does Anna live?").receipt_id)
    sign_in(page, live)
    page.goto(live.url + "/receipts")
    hx_settle(page)
    page.get_by_label("Injected").select_option("yes")
    hx_settle(page)
    page.get_by_label("Degraded").select_option("no")
    hx_settle(page)
    assert "injected=yes" in page.url and "degraded=no" in page.url
    page.go_back()
    page.wait_for_url(live.url + "/")


@pytest.fixture
def long_named(live):
    """An anchor with a long unbroken name, a memory on it and an edge to another anchor."""
    eng = live.engine
    sid = eng.open_session("personal", "work")
    doc = eng.store(sid, "Met at the conference", "The user met them at the conference in Porto.", anchor=LONG,
                    anchor_type="person", relations=[Relation("lives_in", "Porto", "place")]).id
    eng.store(sid, "Porto trip", "The user goes to Porto in May.", anchor="Porto", anchor_type="place")
    anchor_id = next(a.id for a in eng.anchors(eng.viewer(eng.get_token("local"))) if a.name == LONG)
    return {"doc": doc, "anchor": anchor_id}


def test_a_long_unbroken_anchor_name_stays_inside_the_window(page, live, long_named):
    sign_in(page, live)
    anchor = long_named["anchor"]
    for size in (LAPTOP, NARROW):
        page.set_viewport_size(size)
        for path in (f"/anchors/{anchor}", f"/anchors/{anchor}/graph", "/anchors", "/memories",
                     f"/memories?anchor={anchor}", f"/memories/{long_named['doc']}",
                     "/scoping/view?audience=personal&boundary=work"):
            page.goto(live.url + path)
            page.wait_for_load_state("networkidle")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= size["width"], (path, size["width"], width, page.evaluate(SPILL))
    page.goto(f"{live.url}/anchors/{anchor}")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        check_axe(page, f"long anchor name {scheme}")
        page.screenshot(path=str(SHOTS / f"anchor-long-name-{scheme}-narrow.png"), full_page=True)


def test_the_graph_keeps_readable_labels_in_a_narrow_window_and_scrolls_in_its_own_box(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Anna lives in Lisbon", "The user's sister Anna lives in Lisbon.", anchor="Anna",
              anchor_type="person", relations=[Relation("lives_in", "Lisbon", "place"),
                                               Relation("sister_of", "User", "person"),
                                               Relation("works_at", "Acme Robotics", "organisation"),
                                               Relation("owns", "Rex", "pet")])
    anna = next(a.id for a in eng.anchors(eng.viewer(eng.get_token("local"))) if a.name == "Anna")
    sign_in(page, live)
    page.set_viewport_size(NARROW)
    page.goto(f"{live.url}/anchors/{anna}")
    page.wait_for_load_state("networkidle")

    assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]  # the page does not scroll
    # The labels' 15 px as drawn: shrunk to fit the window they came out at half that or less.
    drawn = page.locator("svg.graph").evaluate("e => 15 * e.getBoundingClientRect().width / e.viewBox.baseVal.width")
    assert drawn >= 12, drawn
    graph = page.locator(".graph-box")
    assert graph.evaluate("e => e.scrollWidth > e.clientWidth")  # the rest of it is a sideways scroll away
    box, centre = graph.bounding_box(), page.locator("svg.graph .node.center circle").bounding_box()
    middle = centre["x"] + centre["width"] / 2
    assert abs(middle - (box["x"] + box["width"] / 2)) < 20, (box, centre)  # it opens on the anchor
    check_axe(page, "graph narrow")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(SHOTS / f"graph-scrolls-{scheme}-narrow.png"), full_page=True)


def test_a_title_longer_than_the_limit_is_refused_on_the_form_not_cut_short(page, live):
    sign_in(page, live)
    page.goto(live.url + "/memories/new")
    title = "Trip" * 150  # 600 characters, no space to cut at
    page.get_by_label("Title").fill(title)
    page.get_by_label("What to remember").fill("The user goes to Porto in May.")
    page.get_by_role("button", name="Save memory").click()
    page.get_by_role("alert").wait_for()
    assert "title is 600 characters; the limit is 300" in page.get_by_role("alert").inner_text()
    assert page.get_by_label("Title").input_value() == title  # what was typed is still there
    assert page.get_by_label("What to remember").input_value() == "The user goes to Porto in May."
    assert live.engine.list_memories(live.engine.viewer(live.engine.get_token("local"))) == []


def test_the_pages_these_changes_touch_pass_axe_in_light_and_dark(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    doc = eng.store(sid, "Anna lives in Lisbon.", "Anna lives in Lisbon. She visits in May.", anchor="Anna",
                    anchor_type="person", relations=[Relation("lives_in", "Lisbon", "place")]).id
    eng.update(sid, doc, old_text="Lisbon", new_text="Porto")
    eng.explain(eng.recall(sid, "where does Anna live?").receipt_id)
    notes = ["".join(f"- Note {n}: the user keeps fact number {n} in mind.\n" for n in range(1, last + 1)).encode()
             for last in (13, 15)]  # the second time, the same notes and two new ones
    sign_in(page, live)

    def refused_title():
        page.goto(live.url + "/memories/new")
        page.get_by_label("Title").fill("Trip" * 150)
        page.get_by_label("What to remember").fill("The user goes to Porto in May.")
        page.get_by_role("button", name="Save memory").click()
        page.get_by_role("alert").wait_for()

    def imported_twice():
        for content in notes:
            page.goto(live.url + "/transfer")
            page.get_by_label("File", exact=True).set_input_files({"name": "MEMORY.md", "mimeType": "text/markdown",
                                                                   "buffer": content})
            page.get_by_role("button", name="Preview the import").click()
            page.locator("#preview").get_by_role("button", name="Import").click()
            page.locator("#result").wait_for()
        assert "and 3 more." in page.locator("#result").inner_text()

    states = {
        "memories search": lambda: page.goto(live.url + "/memories?q=Anna"),
        "anchors": lambda: page.goto(live.url + "/anchors?q=Anna"),
        "receipts": lambda: page.goto(live.url + "/receipts?injected=yes"),
        "memory diff": lambda: page.goto(f"{live.url}/memories/{doc}"),
        "view as without a boundary": lambda: page.goto(live.url + "/scoping/view?audience=personal&boundary="),
        "title refused": refused_title,
        "import result": imported_twice,
    }
    for name, reach in states.items():
        reach()
        page.wait_for_load_state("networkidle")
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            check_axe(page, f"{name} {scheme}")
        page.emulate_media(color_scheme="light")
    page.goto(f"{live.url}/memories/{doc}")
    labels = page.locator("#diff h4").all_inner_texts()
    assert labels == ["Title", "Text"], labels
    page.locator("#diff").screenshot(path=str(SHOTS / "memory-diff-labelled.png"))


def test_write_a_memory_offers_every_boundary_in_use_and_a_click_fills_it_in(page, live):
    eng = live.engine
    for boundary in ("work", "work", "home"):  # "work" most used: it is filled in
        eng.open_session("personal", boundary)
    sign_in(page, live)
    page.goto(live.url + "/memories/new")
    field = page.get_by_label("Boundary", exact=True)
    assert field.input_value() == "work"
    page.get_by_role("button", name="Boundary home").click()
    assert field.input_value() == "home"
    assert page.evaluate("() => document.activeElement.id") == "boundary"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "memory-new-boundaries.png"), full_page=True)
    page.get_by_label("What to remember").fill("The user waters the garden on Saturdays.")
    page.get_by_role("button", name="Save memory").click()
    page.wait_for_url("**/memories/doc-*")
    home = eng.list_memories(eng.viewer(eng.get_token("local")))
    assert [(m.boundary, m.body) for m in home] == [("home", "The user waters the garden on Saturdays.")]
