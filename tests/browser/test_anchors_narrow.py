"""The anchors table stacks into labelled rows in a narrow window, like the other tables: nothing
runs off the right edge (the Edges column was cut at 390 px), every count keeps its label."""

from __future__ import annotations

from keepmind.engine import Relation
from support.browser import NARROW, SHOTS, check_axe, sign_in


def test_the_anchors_table_stacks_into_labelled_rows_at_390_px(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Anna lives in Lisbon", "The user's sister Anna lives in Lisbon.", anchor="Anna",
              anchor_type="person", relations=[Relation("lives_in", "Lisbon", "place"),
                                               Relation("sister_of", "User", "person")])
    eng.store(sid, "Works at Acme", "The user works at Acme Robotics as a data engineer.", anchor="Acme Robotics",
              anchor_type="organisation", relations=[Relation("based_in", "Porto", "place")])
    eng.store(sid, "Seat preference", "The user prefers window seats on long flights.",
              anchor="user preference: window seats long flights", anchor_type="topic")
    team = eng.open_session("team", "platform-infrastructure")
    eng.store(team, "Release day", "The team ships on Fridays.", anchor="Release", anchor_type="workflow",
              relations=[Relation("owned_by", "Platform team", "organisation")])
    sign_in(page, live)
    page.set_viewport_size(NARROW)
    page.goto(live.url + "/anchors")
    page.wait_for_load_state("networkidle")

    assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
    rows = page.locator("table.anchors tbody tr")
    assert rows.count() >= 6
    for i in range(rows.count()):
        row = rows.nth(i)
        for label in ("Type", "Where", "Memories", "Edges"):
            cell = row.locator(f'td[data-label="{label}"]')
            box = cell.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= NARROW["width"], (i, label, box)
            before = cell.evaluate("e => getComputedStyle(e, '::before').content")
            assert label in before, (label, before)  # each value says what it is
    check_axe(page, "anchors narrow")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(SHOTS / f"anchors-stacked-{scheme}-narrow.png"), full_page=True)
