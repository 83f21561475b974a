"""engine/tokens.py: secrets shown once and stored hashed, ceilings and boundaries, revocation."""

from __future__ import annotations

import pytest

from keepmind.engine import tokens
from keepmind.engine.errors import InvalidInput, NotFound, ScopeError


def create(engine, name, ceiling="team", boundaries=("*",)):
    return engine.write(tokens.create, name, ceiling, list(boundaries), engine.now())


def test_secret_is_returned_once_and_only_its_hash_is_stored(engine):
    created = create(engine, "bot")
    assert created.secret.startswith("km_") and len(created.secret) > 40
    with engine.db.snapshot() as conn:
        row = conn.execute("SELECT token_hash FROM api_tokens").fetchone()
        assert row[0] == tokens.hash_secret(created.secret) and created.secret not in row[0]
        assert tokens.verify(conn, created.secret) == created.token
        assert tokens.verify(conn, created.secret + "x") is None
        assert tokens.verify(conn, "not-a-token") is None
        assert tokens.verify(conn, None) is None
    assert create(engine, "bot2").secret != created.secret


def test_revoked_tokens_never_verify_and_stay_listed_as_revoked(engine):
    created = create(engine, "bot")
    revoked = engine.write(tokens.revoke, "bot", engine.now())
    assert revoked.revoked_at is not None
    with engine.db.snapshot() as conn:
        assert tokens.verify(conn, created.secret) is None
        assert tokens.list_tokens(conn) == []
        assert [t.name for t in tokens.list_tokens(conn, include_revoked=True)] == ["bot"]
    with pytest.raises(NotFound):
        engine.write(tokens.revoke, "nobody", engine.now())


@pytest.mark.parametrize("ceiling,audience,allowed", [
    ("personal", "personal", True), ("personal", "team", True), ("personal", "public", True),
    ("team", "personal", False), ("team", "team", True), ("team", "public", True),
    ("public", "team", False), ("public", "public", True),
])
def test_the_audience_ceiling(ceiling, audience, allowed):
    token = tokens.Token("tok-x", "x", ceiling, ("*",), 0)
    assert token.permits(audience, "any") is allowed


def test_boundaries_and_covers():
    work = tokens.Token("a", "a", "team", ("work",), 0)
    anywhere = tokens.Token("b", "b", "team", ("*",), 0)
    personal = tokens.Token("c", "c", "personal", ("*",), 0)
    assert work.permits("team", "work") and not work.permits("team", "home")
    assert anywhere.permits("team", "home")
    assert personal.covers(anywhere) and personal.covers(work) and anywhere.covers(work)
    assert not work.covers(anywhere) and not anywhere.covers(personal)


def test_a_token_cannot_revoke_a_wider_one(engine):
    narrow = create(engine, "narrow", "team", ["work"]).token
    create(engine, "wide", "personal")
    with pytest.raises(ScopeError):
        engine.write(tokens.revoke, "wide", engine.now(), by=narrow)


@pytest.mark.parametrize("name,ceiling,boundaries,fragment", [
    ("", "team", ["*"], "token name"),
    ("has/slash", "team", ["*"], "token name"),
    ("ok", "admin", ["*"], "unknown audience ceiling"),
    ("ok", "team", [], "boundaries is empty"),
    ("ok", "team", [" "], "boundaries is empty"),
    ("ok", "team", [3], "list of boundary names"),
])
def test_bad_token_specs_say_what_to_fix(engine, name, ceiling, boundaries, fragment):
    with pytest.raises(InvalidInput, match=fragment):
        engine.write(tokens.create, name, ceiling, boundaries, engine.now())


def test_names_are_unique(engine):
    create(engine, "bot")
    with pytest.raises(InvalidInput, match="exists already"):
        create(engine, "bot")
