"""The Scoping page's token form: a boundaries field of only separators names no boundary, and is
refused rather than read as empty (empty means every boundary: the widest token there is)."""

from __future__ import annotations

from support.pages import sign_in


def test_a_boundaries_field_of_only_commas_is_refused_not_made_the_widest_token(client, engine):
    token = sign_in(client, engine)
    before = {t.name for t in engine.list_tokens()}
    r = client.post("/tokens", data={"csrf_token": token, "name": "helper", "ceiling": "team", "boundaries": " , ,"},
                    headers={"HX-Request": "true"})
    assert r.status_code == 422 and "only commas and spaces" in r.get_data(as_text=True)
    assert {t.name for t in engine.list_tokens()} == before
    r = client.post("/tokens", data={"csrf_token": token, "name": "helper", "ceiling": "team", "boundaries": ""},
                    headers={"HX-Request": "true"})
    assert r.status_code == 200
    assert next(t for t in engine.list_tokens() if t.name == "helper").any_boundary  # empty: every boundary, as said
    r = client.post("/tokens", data={"csrf_token": token, "name": "work-only", "ceiling": "team",
                                     "boundaries": " work , , home "}, headers={"HX-Request": "true"})
    assert r.status_code == 200
    assert next(t for t in engine.list_tokens() if t.name == "work-only").boundaries == ("work", "home")
