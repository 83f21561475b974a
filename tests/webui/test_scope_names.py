"""Scope names: control and invisible characters and the reserved `*` are refused wherever a
boundary enters (sessions, tokens, imports, settings); ordinary names, emoji included, pass."""

from __future__ import annotations

import json

import pytest

from keepmind.desktop.cli import main as cli

BAD_NAMES = ["wo\u0000rk", "wo\nrk", "wo\u0007rk", "\u001b[31mwork", "wo\u202erk", "wo\u200brk", "*", " * ",
             "x" * 201]
GOOD_NAMES = ["work", "Équipe 2026", "team-a/backend", "👩\u200d💻 devs", "客户"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_session_boundary_with_a_hidden_character_or_a_reserved_name_is_refused(api, live, name):
    r = api.post("/sessions", json={"audience": "personal", "boundary": name})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert ("control or invisible character" in error or "reserved" in error or "at most 200" in error
            or "characters; the limit is 200" in error), error
    if name.strip() != "*":  # in a token's boundaries `*` is the wildcard (below)
        r = api.post("/tokens", json={"name": "narrow", "audience_ceiling": "team", "boundaries": ["work", name]})
        assert r.status_code == 400, r.text
    with live.engine.db.snapshot() as conn:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM api_tokens WHERE name='narrow'").fetchone()[0] == 0


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_ordinary_boundary_names_are_accepted(api, name):
    r = api.post("/sessions", json={"audience": "personal", "boundary": name, "channel": name})
    assert r.status_code == 200, r.text
    assert r.json()["session"]["boundary"] == name


def test_a_channel_with_a_control_character_is_refused_and_the_wildcard_stays_a_token_wildcard(api):
    r = api.post("/sessions", json={"audience": "personal", "boundary": "work", "channel": "cli\u0000"})
    assert r.status_code == 400 and "channel" in r.json()["error"]
    r = api.post("/tokens", json={"name": "every-boundary", "audience_ceiling": "team", "boundaries": ["*"]})
    assert r.status_code == 200 and r.json()["token"]["boundaries"] == ["*"]


def test_the_cli_refuses_a_reserved_or_hidden_boundary_for_tokens_and_imports(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    notes = tmp_path / "notes.md"
    notes.write_text("- The user prefers tea.\n")
    assert cli(["token", "create", "bot", "--home", str(home), "--boundary", "wo\u001brk"]) == 2
    assert "control or invisible character" in capsys.readouterr().err
    assert cli(["import", str(notes), "--home", str(home), "--boundary", "*"]) == 2
    assert "reserved" in capsys.readouterr().err
    assert cli(["import", str(notes), "--home", str(home), "--boundary", "work"]) == 0


@pytest.mark.parametrize("settings", [{"mcp": {"boundary": "*"}}, {"mcp.boundary": "wo\u0000rk"},
                                      {"policy": {"cross_boundary_reads": {"work": ["*"]}}},
                                      {"policy": {"cross_boundary_reads": {"wo\u202erk": ["home"]}}}])
def test_settings_refuse_a_reserved_or_hidden_boundary(tmp_path, capsys, settings):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps(settings))
    assert cli(["stats", "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert "boundary" in err and ("reserved" in err or "control or invisible" in err), err


def test_a_session_stored_before_names_were_checked_stays_readable(engine):
    def legacy(conn, now):
        conn.execute("INSERT INTO sessions(session_id, audience, boundary, created_at, updated_at)"
                     " VALUES (?,?,?,?,?)", ("ses-" + "1" * 32, "personal", "wo\u0000rk", now, now))
    engine.write(legacy, engine.now())
    assert engine.find("ses-" + "1" * 32, "anything") == []
