"""A memory's revisions table stacks into labelled rows in a phone-width window, like the other
tables: at 360 px its Revert buttons sat past the right edge of their box, reachable only by
scrolling the table sideways."""

from __future__ import annotations

from support.browser import SHOTS, check_axe, sign_in

PHONE = {"width": 360, "height": 780}


def test_the_revisions_table_fits_a_360_px_window_with_every_revert_button_in_view(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    doc = eng.store(sid, "Seat preference", "The user prefers window seats on flights.").id
    eng.update(sid, doc, old_text="window seats", new_text="window seats, never the last row")
    eng.update(sid, doc, old_text="on flights", new_text="on long flights")
    sign_in(page, live)
    page.set_viewport_size(PHONE)
    page.goto(f"{live.url}/memories/{doc}")
    page.wait_for_load_state("networkidle")

    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    box = page.locator("div.revisions")
    assert box.evaluate("e => e.scrollWidth <= e.clientWidth"), "the revisions box scrolls sideways"
    buttons = page.get_by_role("button", name="Revert to")
    assert buttons.count() == 2
    for i in range(buttons.count()):
        b = buttons.nth(i).bounding_box()
        assert b is not None and b["x"] >= 0 and b["x"] + b["width"] <= PHONE["width"], (i, b)
    for label in ("Revision", "When", "Why", "From", "To"):
        cell = page.locator(f'table.history td[data-label="{label}"]').first
        assert label in cell.evaluate("e => getComputedStyle(e, '::before').content"), label
    page.get_by_label("Compare from revision 1").check()
    page.get_by_label("Compare to revision 3").check()
    page.get_by_role("button", name="Compare").click()
    page.get_by_text("Revision 1 → 3").wait_for()
    check_axe(page, "revisions narrow")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(SHOTS / f"revisions-stacked-{scheme}-phone.png"), full_page=True)
