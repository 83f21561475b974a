"""Merging a place into the person who lives there: the edge between the two does not become a
loop on one anchor ("Previously lives in Anna", drawn as a self-loop); the confirmation names the
edge it drops, and an undo brings it back."""

from __future__ import annotations

import re

import pytest

from keepmind.engine import Relation
from support.pages import sign_in

HX = {"HX-Request": "true"}


@pytest.fixture
def anna_in_porto(client, engine, personal):
    engine.store(personal, "Anna's home", "Anna lives in Porto.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Porto", "place")])
    by_name = {a.name: a.id for a in engine.anchors(engine.viewer(engine.ensure_token(None).token), limit=100)}
    return by_name["Anna"], by_name["Porto"], sign_in(client, engine)


def said(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_merging_a_place_into_its_resident_drops_the_edge_between_them_and_undo_brings_it_back(
        client, engine, anna_in_porto):
    anna, porto, csrf = anna_in_porto
    asked = client.post(f"/anchors/{porto}/merge", data={"csrf_token": csrf, "into": anna}, headers=HX)
    text = said(asked.get_data(as_text=True))
    assert "The edge between them, “Anna lives in Porto”, is dropped" in text
    assert "An undo brings back what is dropped." in text and "0 edges move there" in text

    done = client.post(f"/anchors/{porto}/merge", data={"csrf_token": csrf, "into": anna, "confirmed": "yes"})
    assert done.status_code == 303
    page = said(client.get(f"/anchors/{anna}").get_data(as_text=True))
    assert "lives in Anna" not in page and "Anna lives in Anna" not in page
    scope = engine.viewer(engine.ensure_token(None).token)
    _, drawn, _ = engine.neighbourhood(scope, anna)
    assert [e for e in drawn if e.from_id == e.to_id] == [] and engine.edges(scope, anna) == []

    undo = re.search(r'action="(/anchors/[^"]+/merges/[^"]+/undo)"', client.get(f"/anchors/{anna}").get_data(
        as_text=True)).group(1)
    assert client.post(undo, data={"csrf_token": csrf}).status_code == 303
    [edge] = engine.edges(scope, anna)
    assert (edge.from_id, edge.relation, edge.to_id, edge.valid_to) == (anna, "lives_in", porto, None)
    assert "lives in Porto" in said(client.get(f"/anchors/{anna}").get_data(as_text=True))
