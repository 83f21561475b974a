"""A duplicate merged into another is no deletion, and an erased memory is no page: the merged
one's old address names and links the memory it went into (only to a viewer who may see that
memory), the survivor's revision links the duplicate it merged in, and a recall's page says
"erased" of a memory erased for good instead of linking to a Not found."""

from __future__ import annotations

import re

import pytest

from support.pages import sign_in


@pytest.fixture
def csrf(client, engine):
    return sign_in(client, engine)


def sign_in_as(client, engine, token_name: str) -> None:
    """Another browser, signed in through a one-time link with `token_name`'s reach."""
    secret = engine.ensure_token(None).secret
    r = client.post("/api/v1/ui/links", json={"as": token_name}, headers={"Authorization": f"Bearer {secret}"})
    assert client.get(r.get_json()["url"].split("127.0.0.1:8765")[1]).status_code == 303


def said(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_a_merged_memorys_old_page_names_and_links_the_one_it_went_into(client, app, engine, team, csrf):
    keep = engine.store(team, "Deploys", "The team deploys on Fridays.").id
    dup = engine.store(team, "Deploy day", "Deploys happen on Fridays after the standup.").id
    r = client.post(f"/memories/{dup}/merge", data={"csrf_token": csrf, "into": keep, "confirmed": "yes"})
    assert r.status_code == 303

    old = client.get(f"/memories/{dup}")
    page = old.get_data(as_text=True)
    assert old.status_code == 200
    assert "This memory was merged into “Deploys” as a duplicate" in said(page)
    assert f'href="/memories/{keep}"' in page and "after the standup" in page
    assert "Look in Deleted" not in page and "Not found" not in page

    survivor = client.get(f"/memories/{keep}").get_data(as_text=True)  # its revision links the duplicate
    assert f'merged <a href="/memories/{dup}"' in survivor and f">merged {dup}<" not in survivor

    engine.create_token("elsewhere", "team", ["other"])  # a token whose reach holds neither memory
    with app.test_client() as narrow:
        sign_in_as(narrow, engine, "elsewhere")
        hidden = narrow.get(f"/memories/{dup}")
        assert hidden.status_code == 404
        assert "Deploys" not in hidden.get_data(as_text=True) and keep not in hidden.get_data(as_text=True)


def test_a_memory_deleted_as_wrong_is_not_named_merged(client, engine, personal, csrf):
    doc = engine.store(personal, "Wrong", "The user owns a yacht.").id
    engine.update(personal, doc, delete=True, source="ui")
    assert engine.duplicate_merged_into(engine.viewer(engine.ensure_token(None).token), doc) is None
    gone = client.get(f"/memories/{doc}")
    assert gone.status_code == 404 and "Look in Deleted" in gone.get_data(as_text=True)


def test_a_recall_page_says_erased_of_an_erased_memory_and_links_nowhere(client, engine, personal, csrf):
    doc = engine.store(personal, "Hose", "The garden hose is in the blue shed.").id
    receipt = engine.recall(personal, "where is the garden hose?").receipt_id
    engine.explain(receipt)
    engine.update(personal, doc, delete=True, source="ui")
    [tomb] = engine.deleted()[0]
    engine.erase(tomb["tombstone_id"])
    page = client.get(f"/receipts/{receipt}").get_data(as_text=True)
    assert "a memory since erased for good" in page
    assert f'href="/memories/{doc}"' not in page and "(deleted memory)" not in page
