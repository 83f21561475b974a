"""A memory that later sessions added to shows each of them under 'Where it came from'."""

from __future__ import annotations

from support.browser import check_axe, shoot, sign_in
from support.provider import drain


def test_a_memory_added_to_later_shows_both_sessions(page, live):
    eng = live.engine
    for title, turns in (("Booking a trip", ["I prefer window seats when I fly."]),
                         ("Packing list", ["Hello there.", "I prefer window seats when I fly, and never the last row."])):
        sid = eng.open_session("personal", "work", title=title)
        for text in turns:
            eng.add_turn(sid, user=text, assistant="Noted.")
        eng.writepath.observer.distill(sid, eng.now())
        drain(eng)
    [doc] = eng.list_memories(eng.open_session("personal", "work"))
    sign_in(page, live)
    page.goto(live.url + f"/memories/{doc.id}")
    where = page.locator("#provenance")
    assert "Booking a trip" in where.inner_text() and "Packing list" in where.inner_text()
    assert where.locator("h3").inner_text().startswith("Added to ")
    check_axe(page, "memory added to later")
    shots = shoot(page, "memory-added-later")
    assert all(p.stat().st_size > 5_000 for p in shots)
