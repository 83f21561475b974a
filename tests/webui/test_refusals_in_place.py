"""What a page refuses it says as a refusal, in place, naming the field at fault: a date past the
calendar is a 400 like any other wrong date (it was a 500), a NUL in an edit's text is blamed on
the text (the engine's message blamed the title), and "view as" without a boundary answers on the
Scoping page with the field marked (it was a bare error page)."""

from __future__ import annotations

import re

import pytest

from keepmind.engine import Relation
from support.pages import sign_in


@pytest.fixture
def anna(engine, personal) -> str:
    engine.store(personal, "Anna", "Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Lisbon", "place")])
    return next(a.id for a in engine.anchors(engine.scope(personal)) if a.name == "Anna")


@pytest.mark.parametrize("as_of", ["9999-12-31", "garbage"])
def test_an_as_of_date_past_the_calendar_is_refused_like_a_wrong_one(client, engine, anna, as_of):
    sign_in(client, engine)
    for path in (f"/anchors/{anna}", f"/anchors/{anna}/graph"):
        r = client.get(path, query_string={"as_of": as_of})
        assert r.status_code == 400, (path, r.status_code)
        assert "pick one" in r.get_data(as_text=True)


def test_the_last_day_the_calendar_can_end_still_shows_the_anchor(client, engine, anna):
    sign_in(client, engine)
    r = client.get(f"/anchors/{anna}", query_string={"as_of": "9999-12-30"})
    assert r.status_code == 200 and "Lisbon" in r.get_data(as_text=True)


def edit(client, csrf, doc, **fields):
    return client.post(f"/memories/{doc}/edit", headers={"HX-Request": "true"},
                       data={"csrf_token": csrf, "mode": "rewrite", **fields})


def alert(html: str) -> str:
    return re.search(r'role="alert">(.*?)</p>', html, re.S).group(1)


def test_a_nul_in_the_text_of_an_edit_is_blamed_on_the_text_not_the_title(client, engine, personal):
    csrf = sign_in(client, engine)
    # A title that is the text's first sentence follows the text: the engine checked that new title first.
    doc = engine.store(personal, "Anna lives in Lisbon.", "Anna lives in Lisbon. She likes tea.").id
    r = edit(client, csrf, doc, title="Anna lives in Lisbon.", content="Anna lives\u0000 in Porto.")
    assert r.status_code == 422
    said = alert(r.get_data(as_text=True))
    assert said.startswith("The text holds a control or invisible character (NUL"), said
    assert "title" not in said
    r = edit(client, csrf, doc, title="Anna\u0000", content="Anna lives in Porto.")
    assert alert(r.get_data(as_text=True)).startswith("The title holds a control or invisible character (NUL")
    assert engine.revisions(personal, doc)[0]["body"] == "Anna lives in Lisbon. She likes tea."  # nothing saved


def test_a_find_and_replace_with_a_nul_names_the_replacement(client, engine, personal):
    csrf = sign_in(client, engine)
    doc = engine.store(personal, "Anna", "Anna lives in Lisbon.").id
    r = edit(client, csrf, doc, mode="replace", old_text="Lisbon", new_text="Por\u0000to")
    assert r.status_code == 422
    assert alert(r.get_data(as_text=True)).startswith("The replacement holds a control or invisible character")


@pytest.mark.parametrize("boundary", ["", "   "])
def test_view_as_without_a_boundary_says_so_on_the_scoping_page_with_the_field_marked(client, engine, boundary):
    sign_in(client, engine)
    r = client.get("/scoping/view", query_string={"audience": "personal", "boundary": boundary})
    html = r.get_data(as_text=True)
    assert r.status_code == 422
    assert "<h1>Who can read what</h1>" in html  # the Scoping page, not an error page
    assert re.search(r'id="view-error">a boundary is required', html)
    field = re.search(r'<input id="view-boundary"[^>]*>', html).group(0)
    assert "required" in field and 'aria-invalid="true"' in field and 'aria-describedby="view-error"' in field
    # through htmx, the same message in place of the view (the field is not sent again)
    r = client.get("/scoping/view", query_string={"audience": "personal", "boundary": boundary},
                   headers={"HX-Request": "true"})
    assert r.status_code == 422 and "a boundary is required" in r.get_data(as_text=True)


def test_view_as_with_a_boundary_marks_no_field(client, engine, personal):
    sign_in(client, engine)
    r = client.get("/scoping/view", query_string={"audience": "personal", "boundary": "work"})
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    assert "What a personal session in work sees" in html and "aria-invalid" not in html
