"""The local token (the one in <home>/token) is not revoked through the server that its own
clients talk to: not by the API, not from a page signed in with another personal token."""

from __future__ import annotations

import re

import pytest

from keepmind.webui.app import create_app


@pytest.fixture
def local(engine):
    return engine.ensure_token(None)


@pytest.fixture
def spare(engine):
    """Another token with the local one's reach: it covers the local token."""
    return engine.create_token("laptop", "personal")


@pytest.fixture
def app(engine, local):
    return create_app(engine, {"port": 8765, "local_token_id": local.token.id})


def bearer(secret):
    return {"Authorization": f"Bearer {secret}"}


def signed_in_as(client, secret):
    r = client.post("/api/v1/ui/links", json={}, headers=bearer(secret))
    client.get(r.get_json()["url"].split("127.0.0.1:8765")[1])
    page = client.get("/scoping").get_data(as_text=True)
    return re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)


@pytest.mark.parametrize("by", ["id", "name"])
def test_the_api_refuses_to_revoke_the_local_token(client, engine, local, spare, by):
    target = local.token.id if by == "id" else local.token.name
    r = client.post(f"/api/v1/tokens/{target}/revoke", headers=bearer(spare.secret))
    assert r.status_code == 403
    error = r.get_json()["error"]
    assert "local token" in error and "keepmind token revoke local" in error
    assert engine.verify_token(local.secret) is not None


def test_a_page_signed_in_with_another_token_cannot_revoke_the_local_one(client, engine, local, spare):
    csrf = signed_in_as(client, spare.secret)
    for form in ({"csrf_token": csrf}, {"csrf_token": csrf, "confirmed": "yes"}):
        r = client.post(f"/tokens/{local.token.id}/revoke", data=form)
        assert r.status_code == 403
        assert "is the local token" in r.get_data(as_text=True)
    assert engine.verify_token(local.secret) is not None


def test_other_tokens_are_still_revoked_both_ways(client, engine, local, spare):
    other = engine.create_token("ci", "team")
    r = client.post(f"/api/v1/tokens/{other.token.id}/revoke", headers=bearer(local.secret))
    assert r.status_code == 200 and engine.verify_token(other.secret) is None
    csrf = signed_in_as(client, local.secret)
    r = client.post(f"/tokens/{spare.token.id}/revoke", data={"csrf_token": csrf, "confirmed": "yes"})
    assert r.status_code in (200, 303)
    assert engine.verify_token(spare.secret) is None and engine.verify_token(local.secret) is not None


def test_the_tokens_table_says_which_is_keepminds_own_and_offers_no_revoke_for_it(client, local, spare):
    signed_in_as(client, spare.secret)
    page = client.get("/scoping").get_data(as_text=True)
    assert f'action="/tokens/{local.token.id}/revoke"' not in page
    assert "Keepmind's own</span>" in page and "keepmind token revoke local" in page


def test_a_narrower_token_is_refused_as_for_any_wider_token_and_learns_no_name(client, engine, local):
    team = engine.create_token("team-work", "team", ["work"])
    r = client.post(f"/api/v1/tokens/{local.token.id}/revoke", headers=bearer(team.secret))
    assert r.status_code == 404 and "that this token may revoke" in r.get_json()["error"]
    assert "local" not in r.get_json()["error"]
    # as for a token that does not exist: a narrow token cannot probe which ids do (a walk)
    missing = client.post("/api/v1/tokens/tok-" + "0" * 32 + "/revoke", headers=bearer(team.secret))
    assert missing.status_code == 404
    assert missing.get_json()["error"].replace("tok-" + "0" * 32, "ID") == r.get_json()["error"].replace(
        local.token.id, "ID")
    assert engine.verify_token(local.secret) is not None


def test_signed_in_as_the_local_token_the_page_says_how_to_replace_it(client, engine, local):
    csrf = signed_in_as(client, local.secret)
    r = client.post(f"/tokens/{local.token.id}/revoke", data={"csrf_token": csrf, "confirmed": "yes"})
    assert r.status_code == 403 and "is the local token" in r.get_data(as_text=True)
    assert engine.verify_token(local.secret) is not None


def test_a_boundary_limited_token_is_told_its_reach_when_it_asks_for_more(client, engine, local):
    team = engine.create_token("team-work", "team", ["work", "home"])
    signed_in_as(client, team.secret)
    page = client.get("/scoping").get_data(as_text=True)
    assert "among the ones you may use: work, home" in page and "empty means every boundary" not in page
    r = client.post("/api/v1/tokens", json={"name": "wide", "audience_ceiling": "team"},
                    headers=bearer(team.secret))
    assert r.status_code == 403
    assert "this one has ceiling team and may use only work, home" in r.get_json()["error"]
