"""What a walk through the pages found, fixed, in a real browser: the nav's Review count follows a
proposal kept by its key; Escape from the memory editor gives the focus back to Edit; a Models
page shows the banner of the job it started, not an earlier failed job's too."""

from __future__ import annotations

from support.browser import settled, sign_in


def test_keeping_a_proposal_by_its_key_counts_the_nav_badge_down_without_a_reload(page, start_live, tmp_path, clock):
    live = start_live(tmp_path / "home", clock=clock, memory__curation__review=True)
    try:
        eng = live.engine
        sid = eng.open_session("personal", "work")
        eng.add_turn(sid, user="I usually fly out of Boston Logan.", assistant="Noted.")
        eng.add_turn(sid, user="I'm a Delta SkyMiles Gold member.", assistant="Great.")
        clock.advance(90_000)
        eng.writepath.scheduler.run_once(clock())
        sign_in(page, live)
        page.goto(live.url + "/review")
        assert page.get_by_role("link", name="Review 2 waiting").is_visible()
        page.locator("[data-proposal]").first.focus()
        page.keyboard.press("a")
        page.get_by_text("1 proposal waiting").wait_for()
        assert page.get_by_role("link", name="Review 1 waiting").is_visible()
        page.locator("[data-proposal]").first.focus()
        page.keyboard.press("a")
        page.get_by_text("Nothing waits for review.").wait_for()
        assert page.get_by_role("link", name="Review", exact=True).is_visible()  # no count left
        assert page.console_errors == []
    finally:
        live.stop()


def test_escape_from_the_memory_editor_gives_the_focus_back_to_edit(page, live):
    eng = live.engine
    doc = eng.store(eng.open_session("personal", "work"), "Anna and tea", "Anna drinks green tea.").id
    sign_in(page, live)
    page.goto(f"{live.url}/memories/{doc}")
    edit = page.locator(".titlebar .actions").get_by_role("link", name="Edit")
    edit.focus()
    page.keyboard.press("Enter")
    page.get_by_label("Text").wait_for()
    settled(page, "#memory-text form")  # a slow run read the focus before htmx's settle step gave it
    assert page.evaluate("document.activeElement.id") == "content"  # the editor takes the focus
    page.keyboard.press("Escape")
    page.locator("#memory-text .body", has_text="Anna drinks green tea.").wait_for()
    assert page.get_by_label("Text").count() == 0
    assert page.evaluate("document.activeElement.textContent.trim()") == "Edit"
    page.keyboard.press("Enter")  # and it opens again from there
    page.get_by_label("Text").wait_for()
    page.get_by_role("link", name="Cancel").click()
    page.locator("#memory-text .body", has_text="Anna drinks green tea.").wait_for()
    assert page.evaluate("document.activeElement.textContent.trim()") == "Edit"
    assert page.console_errors == []
