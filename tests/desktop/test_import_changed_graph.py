"""`keepmind import` of an anchor, edge or tombstone row whose id is stored: skipped when it says
what the stored row says, an error naming its line when it was changed under that id (before, any
row with a stored id was skipped, so an edited relation or a tombstone's scope vanished silently)."""

from __future__ import annotations

import json

import pytest

from keepmind.desktop.cli import main as cli
from keepmind.engine import Relation
from support.stores import import_rows


@pytest.fixture
def world(tmp_path, make_engine):
    home = tmp_path / "home"
    engine = make_engine(home)
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Anna", "Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Lisbon", "place")])
    wrong = engine.store(sid, "Claim", "The user owns a boat.").id
    engine.update(sid, wrong, delete=True)
    export = tmp_path / "export.jsonl"
    assert cli(["export", "--home", str(home), "-o", str(export)]) == 0
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    assert {r["type"] for r in rows} >= {"anchor", "edge", "tombstone"}
    return {"home": home, "engine": engine, "rows": rows}


KEYS = {"anchor": "anchor_id", "edge": "edge_id", "tombstone": "tombstone_id"}


@pytest.mark.parametrize("kind, field, value", [
    ("anchor", "anchor_type", "organisation"),
    ("anchor", "audience", "team"),
    ("edge", "relation", "works_at"),
    ("edge", "valid_from", 1),
    ("tombstone", "boundary", "home"),
    ("tombstone", "audience", "team"),
])
def test_a_graph_or_tombstone_row_changed_under_its_id_is_an_error_naming_its_line(world, tmp_path, capsys,
                                                                                      kind, field, value):
    rows = [dict(r) for r in world["rows"]]
    line, row = next((n, r) for n, r in enumerate(rows, 1) if r["type"] == kind and r.get(field) != value)
    row[field] = value
    code, out = import_rows(capsys, world["home"], rows, tmp_path / "changed.jsonl")
    assert code == 1 and "nothing was imported" in out
    assert f"line {line}: {row[KEYS[kind]]} is stored with a different {field}" in out


def test_the_same_rows_again_are_skipped(world, tmp_path, capsys):
    code, out = import_rows(capsys, world["home"], world["rows"], tmp_path / "again.jsonl")
    assert code == 0, out


def test_a_renamed_anchor_and_a_lifted_tombstone_still_import_their_old_export(world, tmp_path, capsys):
    engine = world["engine"]
    scope = engine.scope(engine.open_session("personal", "work"))
    anna = next(r for r in world["rows"] if r["type"] == "anchor" and r["canonical_name"] == "Anna")
    engine.rename_anchor(scope, anna["anchor_id"], "Anna Silva")
    tomb = next(r for r in world["rows"] if r["type"] == "tombstone")
    engine.restore(tomb["tombstone_id"])
    code, out = import_rows(capsys, world["home"], world["rows"], tmp_path / "old.jsonl")
    assert code == 0, out
    assert engine.anchor(scope, anna["anchor_id"]).name == "Anna Silva"
