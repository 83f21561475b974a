"""The anchors page filters by the types the write path really makes (what this viewer can see),
and an anchor's "as of" view shows only the history that had happened by that day."""

from __future__ import annotations

import re
from html import unescape

from keepmind.engine import Relation
from keepmind.engine.clock import DAY_MS
from support.provider import drain


def sign_in(client, engine, token_name: str | None = None) -> None:
    secret = engine.ensure_token(None).secret
    body = {"as": token_name} if token_name else {}
    r = client.post("/api/v1/ui/links", json=body, headers={"Authorization": f"Bearer {secret}"})
    assert r.status_code == 200, r.text
    assert client.get(r.get_json()["url"].split("127.0.0.1:8765")[1]).status_code == 303


def say(engine, session, clock, *lines) -> None:
    """Lines said as user turns, distilled by the observer's rule-based extractor and curated."""
    for line in lines:
        engine.add_turn(session, user=line, assistant="Noted.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    drain(engine)


def offered_types(html: str) -> list[str]:
    select = re.search(r'<select name="type">(.*?)</select>', html, re.S).group(1)
    return [v for v in re.findall(r'<option value="([^"]*)"', select) if v]


def listed(client, **args) -> set[str]:
    html = client.get("/anchors", query_string=args, headers={"HX-Request": "true"}).get_data(as_text=True)
    return {unescape(n) for n in re.findall(r'<a href="/anchors/anc-[^"]+">([^<]+)</a>', html)}


def test_the_type_filter_offers_every_type_the_write_path_made_and_each_finds_its_anchors(
        client, engine, personal, clock):
    say(engine, personal, clock, "My sister Anna lives in Lisbon.", "I work at Acme as a data engineer.",
        "We adopted a dog named Rex.", "I prefer window seats on long flights.")
    sign_in(client, engine)
    types = offered_types(client.get("/anchors").get_data(as_text=True))
    assert {"person", "place", "organisation", "pet", "topic"} <= set(types)
    assert "org" not in types  # a type no writer makes is not offered
    assert "Acme" in listed(client, type="organisation")
    everything = listed(client)
    assert set().union(*(listed(client, type=t) for t in types)) == everything  # every anchor can be filtered to
    html = client.get("/anchors?type=org").get_data(as_text=True)
    assert 'value="org" selected' in html and "No anchor matches." in html  # what the filter shows is what it applies


def test_the_type_filter_offers_only_the_types_of_anchors_the_viewer_may_see(client, app, engine, personal, team,
                                                                             clock):
    say(engine, personal, clock, "We adopted a dog named Rex.")
    engine.store(team, "Release day", "The team ships on Fridays.", anchor="Release", anchor_type="workflow")
    engine.create_token("teamview", "team", ["work"])
    sign_in(client, engine)
    assert {"pet", "workflow"} <= set(offered_types(client.get("/anchors").get_data(as_text=True)))
    with app.test_client() as teamview:  # another browser, signed in with the team token's reach
        sign_in(teamview, engine, "teamview")
        assert offered_types(teamview.get("/anchors").get_data(as_text=True)) == ["workflow"]


def section(html: str, heading_id: str) -> str:
    """The text from a heading to the next heading of the page's edge column."""
    start = html.index(f'id="{heading_id}"')
    end = min(i for i in (html.find("<h2", start + 1), html.find("</section>", start)) if i != -1)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html[start:end]))


def test_as_of_a_day_shows_as_retired_only_what_had_ended_by_then(client, engine, personal, clock):
    clock.now = 1_796_083_200_000  # 2026-12-01T00:00:00Z
    engine.store(personal, "Anna", "Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Lisbon", "place")])
    clock.advance(10 * DAY_MS)  # 2026-12-11: she moves
    engine.store(personal, "Anna moved", "Anna moved to Porto.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Porto", "place")])
    clock.advance(5 * DAY_MS)
    sign_in(client, engine)
    anna = next(a.id for a in engine.anchors(engine.viewer(engine.get_token("local"))) if a.name == "Anna")

    def page(as_of: str | None = None) -> tuple[str, str]:
        html = client.get(f"/anchors/{anna}" + (f"?as_of={as_of}" if as_of else "")).get_data(as_text=True)
        return section(html, "edges-h"), section(html, "retired-h")

    held, retired = page("2020-01-01")  # before any of it
    assert "None." in held and "Nothing retired." in retired and "Lisbon" not in retired
    held, retired = page("2026-12-05")  # she lived in Lisbon; nothing had ended yet
    assert "lives in Lisbon" in held and "Porto" not in held
    assert "Nothing retired." in retired and "Lisbon" not in retired
    held, retired = page("2026-12-13")  # after the move
    assert "lives in Porto" in held and "Lisbon" not in held
    assert "Previously lives in Lisbon" in retired and "until 2026-12-11" in retired and "replaced by Porto" in retired
    held, retired = page()  # today
    assert "lives in Porto" in held and "Previously lives in Lisbon" in retired


def test_an_anchor_left_with_no_memory_and_no_edge_is_not_listed_unless_asked_for(client, engine, personal, team):
    gone = engine.store(personal, "Gym", "The user goes to the gym on Mondays.", anchor="Gym", anchor_type="place").id
    engine.store(personal, "Anna", "Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Lisbon", "place")])
    team_gone = engine.store(team, "Standup", "Standup is at 9.", anchor="Standup").id
    engine.update(personal, gone, delete=True, reason="wrong: no gym")
    engine.update(team, team_gone, delete=True)
    sign_in(client, engine)
    assert listed(client) == {"Anna", "Lisbon"}  # Lisbon has no memory of its own, but an edge
    html = client.get("/anchors").get_data(as_text=True)
    assert "are not listed" in html and "show them too" in html
    assert listed(client, empty="1") == {"Anna", "Lisbon", "Gym", "Standup"}
    assert "only those in use" in client.get("/anchors?empty=1").get_data(as_text=True)
    assert listed(client, q="gym") == set()
    assert "No anchor in use matches." in client.get("/anchors?q=gym").get_data(as_text=True)
    assert listed(client, q="gym", empty="1") == {"Gym"}
    [tomb] = [t for t in engine.deleted()[0] if "gym" in t["body"].lower()]
    engine.restore(tomb["tombstone_id"])
    assert "Gym" in listed(client)  # restored: listed again


def test_a_team_sign_in_is_not_offered_an_audience_it_can_never_see(client, app, engine):
    def audiences(browser) -> list[str]:
        html = browser.get("/memories").get_data(as_text=True)
        select = re.search(r'<select name="audience">(.*?)</select>', html, re.S).group(1)
        return [v for v in re.findall(r'<option value="([^"]*)"', select) if v]

    engine.create_token("teamview", "team", ["work"])
    sign_in(client, engine)
    assert audiences(client) == ["personal", "team"]
    with app.test_client() as teamview:
        sign_in(teamview, engine, "teamview")
        assert audiences(teamview) == ["team"]


def test_a_corrected_fact_is_said_as_never_so_not_as_a_move(client, engine, personal, clock):
    clock.now = 1_796_083_200_000  # 2026-12-01T00:00:00Z
    doc = engine.store(personal, "Anna", "Anna lives in Trondheim.", anchor="Anna", anchor_type="person",
                       relations=[Relation("lives_in", "Trondheim", "place")]).id
    clock.advance(3 * DAY_MS)
    engine.update(personal, doc, old_text="Trondheim", new_text="Bergen")
    sign_in(client, engine)
    anna = next(a.id for a in engine.anchors(engine.viewer(engine.get_token("local"))) if a.name == "Anna")

    def page(as_of: str | None = None) -> tuple[str, str]:
        html = client.get(f"/anchors/{anna}" + (f"?as_of={as_of}" if as_of else "")).get_data(as_text=True)
        return section(html, "edges-h"), section(html, "retired-h")

    held, retired = page()
    assert "lives in Bergen" in held and "Corrected, never so" in retired and "Trondheim" in retired
    assert "Previously lives in Trondheim" not in retired and "replaced by" not in retired
    held, _ = page("2026-12-02")  # between the wrong text and its correction: she never lived there
    assert "Trondheim" not in held


def test_a_fact_deleted_as_wrong_is_said_as_never_so_and_a_restore_makes_it_hold_again(client, engine, personal,
                                                                                          clock):
    """Deleted as wrong, "User is married to Sam." was never so: the anchor page said "Previously
    spouse Sam", as if a marriage had ended, and the day before the deletion showed it held."""
    clock.now = 1_796_083_200_000  # 2026-12-01T00:00:00Z
    doc = engine.store(personal, "Spouse", "User is married to Sam.", anchor="Sam", anchor_type="person",
                       relations=[Relation("spouse", "Sam", "person", True, "User", "person")]).id
    clock.advance(3 * DAY_MS)
    engine.update(personal, doc, delete=True, source="ui")
    sign_in(client, engine)
    viewer = engine.viewer(engine.get_token("local"))
    sam = next(a.id for a in engine.anchors(viewer) if a.name == "Sam")

    def page(as_of: str | None = None) -> tuple[str, str]:
        html = client.get(f"/anchors/{sam}" + (f"?as_of={as_of}" if as_of else "")).get_data(as_text=True)
        return section(html, "edges-h"), section(html, "retired-h")

    held, retired = page()
    assert "Deleted as wrong, never so" in retired and "spouse" in retired and "Previously" not in retired
    assert "spouse" not in page("2026-12-02")[0]  # the day before the deletion: it never held
    [edge] = engine.edges(viewer, sam)
    assert edge.corrected and edge.deleted_as_wrong and engine.edges(viewer, sam, as_of=clock() - DAY_MS) == []
    [tomb] = engine.deleted()[0]
    engine.restore(tomb["tombstone_id"])
    [edge] = engine.edges(viewer, sam)
    assert edge.current and not edge.deleted_as_wrong
    assert "spouse" in page()[0]
