"""Erase for good on the Deleted page: asked first in plain words, then the row says erased (no
text, no Restore), and a restore sent anyway is refused in words."""

from __future__ import annotations

import pytest

from support.pages import sign_in

HX = {"HX-Request": "true"}


@pytest.fixture
def signed_in(client, engine):
    """The client signed in with the local token, and the page's CSRF token."""
    return engine.ensure_token(None), sign_in(client, engine)


def test_erase_for_good_asks_first_then_the_row_says_erased_and_restore_is_refused(client, engine, personal,
                                                                                   signed_in):
    _, csrf = signed_in
    doc = engine.store(personal, "Card", "My bank card hint is the zanzibarquokka.").id
    engine.update(personal, doc, delete=True, source="ui")
    [tomb] = engine.deleted()[0]
    listed = client.get("/memories?deleted=1").get_data(as_text=True)
    assert "zanzibarquokka" in listed and 'aria-label="Erase Card for good"' in listed
    assert f'action="/tombstones/{tomb["tombstone_id"]}/erase"' in listed

    asked = client.post(f"/tombstones/{tomb['tombstone_id']}/erase", data={"csrf_token": csrf}, headers=HX)
    dialog = asked.get_data(as_text=True)
    assert asked.headers["HX-Retarget"] == "#dialog-slot"
    assert "Erase “Card” for good?" in dialog and "cannot be undone" in dialog  # it names what it erases
    assert "still will not learn the same claim again" in dialog and 'name="confirmed" value="yes"' in dialog
    assert engine.deleted()[0][0]["erased_at"] is None  # asking erased nothing

    done = client.post(f"/tombstones/{tomb['tombstone_id']}/erase", data={"csrf_token": csrf, "confirmed": "yes"},
                       headers=HX)
    assert done.headers["HX-Redirect"] == "/memories?deleted=1&erased=1"
    after = client.get("/memories?deleted=1&erased=1").get_data(as_text=True)
    assert "Erased for good: its text is gone." in after and "Erased for good</span>" in after
    assert "zanzibarquokka" not in after and "Card" not in after
    assert f"/tombstones/{tomb['tombstone_id']}/restore" not in after  # no Restore on an erased row

    refused = client.post(f"/tombstones/{tomb['tombstone_id']}/restore", data={"csrf_token": csrf}, headers=HX)
    assert refused.status_code == 400 and "erased for good: nothing left to restore" in refused.get_data(as_text=True)


def test_erasing_needs_the_pages_csrf_token(client, engine, personal, signed_in):
    doc = engine.store(personal, "Card", "My bank card hint is the zanzibarquokka.").id
    engine.update(personal, doc, delete=True, source="ui")
    [tomb] = engine.deleted()[0]
    r = client.post(f"/tombstones/{tomb['tombstone_id']}/erase", data={"confirmed": "yes"}, headers=HX)
    assert r.status_code == 403
    assert engine.deleted()[0][0]["erased_at"] is None
