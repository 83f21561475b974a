"""'Make personal' is offered for what it can change: not for memories already personal."""

from __future__ import annotations

from support.pages import signed_in


def bulk(client, token, *ids):
    return client.post("/memories/bulk", data={"csrf_token": token, "action": "personal", "ids": list(ids)},
                       headers={"HX-Request": "true"})


def test_a_page_of_personal_memories_offers_no_make_personal(engine, personal):
    engine.store(personal, "Seat", "I prefer window seats.")
    client, _ = signed_in(engine)
    page = client.get("/memories").get_data(as_text=True)
    assert "Select all" in page and 'value="personal">Make personal' not in page
    team = engine.open_session("team", "work")
    engine.store(team, "Release", "The team ships on Fridays.")
    assert 'value="personal">Make personal' in client.get("/memories").get_data(as_text=True)


def test_making_personal_what_is_personal_already_says_so_and_asks_nothing(engine, personal):
    seat = engine.store(personal, "Seat", "I prefer window seats.").id
    team = engine.open_session("team", "work")
    release = engine.store(team, "Release", "The team ships on Fridays.").id
    client, token = signed_in(engine)
    r = bulk(client, token, seat)
    assert r.status_code == 200 and "It is personal already." in r.get_data(as_text=True)
    assert "dialog" not in r.get_data(as_text=True)
    r = bulk(client, token, seat, release)  # the confirmation counts only what would change
    assert "Make this memory personal?" in r.get_data(as_text=True)
    assert f'value="{release}"' in r.get_data(as_text=True) and f'value="{seat}"' not in r.get_data(as_text=True)
