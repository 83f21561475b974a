"""Erase for good, as a person does it in headless Chromium: from the Deleted page, through the
confirmation, to a row that says erased, with the memory's text gone from the page and search."""

from __future__ import annotations

from support.browser import check_axe, shoot, sign_in


def test_erase_for_good_from_the_deleted_page_asks_then_leaves_an_erased_row(page, live):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    doc = eng.store(sid, "Card hint", "My bank card hint is the zanzibarquokka.").id
    eng.update(sid, doc, delete=True, source="ui")
    sign_in(page, live)
    page.goto(live.url + "/memories?deleted=1")
    check_axe(page, "deleted-with-erase")
    shoot(page, "deleted-with-erase")
    page.get_by_role("button", name="Erase Card hint for good").click()
    dialog = page.get_by_role("dialog")
    shoot(page, "erase-confirm")
    assert "cannot be undone" in dialog.inner_text() and "will not learn the same claim again" in dialog.inner_text()
    dialog.get_by_role("button", name="Cancel").click()
    assert eng.deleted()[0][0]["erased_at"] is None  # cancelled: nothing erased

    page.get_by_role("button", name="Erase Card hint for good").click()
    page.get_by_role("dialog").get_by_role("button", name="Erase for good").click()
    page.wait_for_url("**/memories?deleted=1&erased=1")
    assert page.get_by_text("Erased for good: its text is gone.").is_visible()
    check_axe(page, "deleted-erased")
    shoot(page, "deleted-erased")
    assert "zanzibarquokka" not in page.content() and "Card hint" not in page.content()
    assert page.get_by_role("button", name="Restore Card hint").count() == 0
    page.goto(live.url + "/memories?q=zanzibarquokka")
    assert page.get_by_text("Nothing matches that search.").is_visible()
