"""engine/tokens.py: secrets shown once and stored hashed, ceilings and boundaries, revocation."""

from __future__ import annotations

import pytest

from keepmind.engine import tokens
from keepmind.engine.errors import InvalidInput, NotFound


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
    with pytest.raises(NotFound, match="no token 'wide' that this token may revoke"):  # as if it did not exist
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


def test_names_are_unique_among_live_tokens_and_a_revoked_ones_name_is_free_again(engine):
    first = create(engine, "bot")
    with pytest.raises(InvalidInput, match="named 'bot' already"):
        create(engine, "bot")
    engine.revoke_token("bot")
    second = create(engine, "bot")
    assert engine.get_token("bot").id == second.token.id != first.token.id
    assert engine.revoke_token("bot").id == second.token.id  # the name means the live token
    assert engine.get_token("bot").id == second.token.id  # then the one revoked last
    assert engine.get_token(first.token.id).revoked_at is not None


def test_a_token_name_cannot_look_like_a_token_id(engine):
    victim = create(engine, "api2")
    with pytest.raises(InvalidInput, match="looks like a token id"):
        create(engine, victim.token.id)
    with pytest.raises(InvalidInput, match="looks like a token id"):
        create(engine, "TOK-anything")


def test_every_boundary_is_given_alone(engine):
    with pytest.raises(InvalidInput, match="give it alone"):
        create(engine, "mixed", boundaries=("*", "work"))


def test_migration_010_keeps_every_token_and_frees_the_names_of_revoked_ones(tmp_path):
    import apsw

    from keepmind.engine.migrations import MIGRATIONS, migrate

    conn = apsw.Connection(str(tmp_path / "old.db"))
    names = [name for name, _ in MIGRATIONS]
    migrate(conn, 0, MIGRATIONS[:names.index("010_token_names_of_live_tokens")])
    old = tokens.create(conn, "local", "personal", ["*"], 1)
    tokens.revoke(conn, "local", 2)
    live = tokens.create(conn, "local-2", "personal", ["*"], 3)  # what the old schema had to do
    assert migrate(conn, 0)[0] == "010_token_names_of_live_tokens"
    assert {t.id: t.revoked_at for t in tokens.list_tokens(conn, include_revoked=True)} == {
        old.token.id: 2, live.token.id: None}
    assert tokens.verify(conn, live.secret).id == live.token.id
    again = tokens.create(conn, "local", "personal", ["*"], 4)
    assert tokens.get(conn, "local").id == again.token.id


# -- POST /tokens from a narrow token: the refusal names the part that is wider ---------------------------

NOT_WIDER = "a token can only create tokens no wider than itself: this one has ceiling team and may use only work"


@pytest.mark.parametrize("sent,said", [
    ({"audience_ceiling": "team"},  # no "boundaries": every boundary, which this token may not give
     NOT_WIDER + '; the new token\'s "boundaries" were left out, which means every boundary (["*"]): '
                 'send "boundaries": ["work"]'),
    ({"audience_ceiling": "team", "boundaries": ["*"]},
     NOT_WIDER + '; the new token\'s "boundaries": ["*"] means every boundary: send "boundaries": ["work"]'),
    ({"audience_ceiling": "team", "boundaries": ["work", " home "]},
     NOT_WIDER + '; the new token\'s boundary home is not among this one\'s: send "boundaries": ["work"]'),
    ({"audience_ceiling": "personal", "boundaries": ["work"]},
     NOT_WIDER + "; the new token's audience_ceiling personal is wider than team: send \"audience_ceiling\": "
                 '"team" or "public"'),
])
def test_a_narrow_token_is_told_which_part_of_the_new_one_is_wider_and_what_to_send(live, sent, said):
    narrow = live.make_token("team-work", "team", ["work"])
    with live.client(narrow) as api:
        refused = api.post("/tokens", json={"name": "x", **sent})
        assert refused.status_code == 403 and refused.json()["error"] == said
        advised = api.post("/tokens", json={"name": "x", "audience_ceiling": "team", "boundaries": ["work"]})
    assert advised.status_code == 200, advised.text  # what it says to send is taken


def test_a_token_of_two_boundaries_is_told_both_and_that_fewer_will_do(live):
    narrow = live.make_token("team-two", "team", ["work", "home"])
    with live.client(narrow) as api:
        refused = api.post("/tokens", json={"name": "x", "audience_ceiling": "personal",
                                            "boundaries": ["work", "play", "gym"]})
    assert refused.status_code == 403
    assert refused.json()["error"] == (
        "a token can only create tokens no wider than itself: this one has ceiling team and may use only work, "
        "home; the new token's audience_ceiling personal is wider than team: send \"audience_ceiling\": \"team\" "
        "or \"public\"; the new token's boundaries play, gym are not among this one's: send \"boundaries\": "
        "[\"work\", \"home\"] or some of them")


def test_revoking_a_token_ends_the_sessions_it_opened_and_no_other(engine):
    bot = create(engine, "bot", "personal").token
    other = create(engine, "other", "personal").token
    mine = engine.open_session("personal", "work", token=bot)
    theirs = engine.open_session("personal", "work", token=other)
    engine.add_turn(mine, user="My sister Anna lives in Lisbon.")
    engine.revoke_token("bot")
    assert engine.session(mine)["status"] == "ended" and engine.session(mine)["ended_at"] is not None
    assert engine.session(theirs)["status"] != "ended"
