"""'Where it came from' names every session that added to a memory, not only the one that made it."""

from __future__ import annotations

import html

from support.pages import signed_in
from support.provider import drain


def said(engine, session, *turns):
    for text in turns:
        engine.add_turn(session, user=text, assistant="Noted.")
    engine.writepath.observer.distill(session, engine.now())
    drain(engine)


def test_a_later_session_that_added_to_a_memory_is_shown_with_its_source_turn(engine):
    first = engine.open_session("personal", "work", title="Booking a trip")
    said(engine, first, "I prefer window seats when I fly.")
    later = engine.open_session("personal", "work", title="Packing list")
    said(engine, later, "Hello there.", "I prefer window seats when I fly, and never the last row.")
    [doc] = engine.list_memories(first)
    assert "never the last row" in doc.body and doc.revision == 2  # curation appended the second
    client, _ = signed_in(engine)
    page = html.unescape(client.get(f"/memories/{doc.id}").get_data(as_text=True))
    where = page.split('id="prov-h"')[1].split("</section>")[0]
    assert "Booking a trip" in where and "Packing list" in where
    added = where.split("Added to")[1]
    assert "source turn 2" in added and "never the last row" in added and "Hello there." not in added


def test_a_memory_no_later_session_added_to_names_only_its_own(engine):
    first = engine.open_session("personal", "work", title="Booking a trip")
    said(engine, first, "I prefer window seats when I fly.")
    [doc] = engine.list_memories(first)
    prov = engine.provenance(engine.viewer(engine.ensure_token(None).token), doc.id)
    assert prov["later"] == [] and prov["session"]["title"] == "Booking a trip" and prov["source_turns"] == [1]
    client, _ = signed_in(engine)
    assert "Added to" not in client.get(f"/memories/{doc.id}").get_data(as_text=True)
