"""A setting that takes one of a few words is a choice on the settings page, not free text."""

from __future__ import annotations

import json
import re

from keepmind.engine.settings import defaults
from support.pages import sign_in


def field(page: str, name: str) -> str:
    at = re.search(r'<(select|input|textarea)[^>]*id="f-' + re.escape(name) + '"', page)
    end = page.index("</select>", at.start()) if at.group(1) == "select" else page.index(">", at.end())
    return page[at.start():end]


def test_audience_and_ranking_offer_their_values_with_the_saved_one_chosen(client, engine):
    token = sign_in(client, engine)
    page = client.get("/settings").get_data(as_text=True)
    audience = field(page, "mcp.audience")
    assert audience.startswith("<select")
    assert re.findall(r'<option value="(\w+)"', audience) == ["personal", "team", "public"]
    assert re.search(r'<option value="personal" selected>', audience)
    ranking = field(page, "memory.recall.ranking")
    assert re.findall(r'<option value="(\w+)"', ranking) == ["hybrid", "fused", "cosine", "bm25"]
    r = client.post("/settings", data={"csrf_token": token, "group": "MCP", "mcp.audience": "team"},
                    headers={"HX-Request": "true"})
    assert r.status_code == 200
    assert json.loads(engine.settings_path.read_text())["mcp.audience"] == "team"
    assert re.search(r'<option value="team" selected>', field(r.get_data(as_text=True), "mcp.audience"))
    r = client.post("/settings", data={"csrf_token": token, "group": "MCP", "mcp.audience": "everyone"},
                    headers={"HX-Request": "true"})  # a forged value is still refused
    assert r.status_code == 422 and "personal, team or public" in r.get_data(as_text=True)


def test_a_free_text_setting_stays_a_text_field(client, engine):
    sign_in(client, engine)
    assert field(client.get("/settings").get_data(as_text=True), "mcp.boundary").startswith("<input")


def test_not_a_number_is_refused_like_infinity_and_nothing_is_written(client, engine):
    token = sign_in(client, engine)
    for said in ("NaN", "nan", "inf", "-Infinity"):
        r = client.post("/settings", data={"csrf_token": token, "group": "Recall",
                                           "memory.recall.vector_weight": said}, headers={"HX-Request": "true"})
        assert r.status_code == 422 and "a number from 0.0 to 1.0" in r.get_data(as_text=True), said
    assert not engine.settings_path.exists() or "vector_weight" not in engine.settings_path.read_text()
    assert engine.settings["memory.recall.vector_weight"] == defaults()["memory.recall.vector_weight"]


def test_every_bad_value_of_a_save_is_said_under_its_own_field_and_only_the_first_takes_the_focus(client, engine):
    token = sign_in(client, engine)
    r = client.post("/settings", data={"csrf_token": token, "group": "Recall", "memory.recall.vector_weight": "2",
                                       "memory.recall.max_items": "-1"}, headers={"HX-Request": "true"})
    page = r.get_data(as_text=True)
    assert r.status_code == 422
    marked = re.findall(r'id="f-([\w.]+)"[^>]*aria-invalid="true"', page)
    assert sorted(marked) == ["memory.recall.max_items", "memory.recall.vector_weight"]
    assert page.count(" autofocus") == 1
    for name in marked:
        said = re.search(r'<div class="field-error" id="e-' + re.escape(name) + r'">(.*?)</div>', page, re.S).group(1)
        assert name in said and all(other not in said for other in marked if other != name)
    assert "Not saved: see" in page and page.count('href="#f-memory.recall.') == 2
    assert not engine.settings_path.exists() or "max_items" not in engine.settings_path.read_text()
