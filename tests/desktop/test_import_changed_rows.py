"""`keepmind import` of a JSON Lines row whose id is stored: skipped only when it says what the stored
memory says; one whose text, scope or class was changed under the same id is an error naming its
line, and nothing of the file is imported."""

from __future__ import annotations

import re
import uuid

import pytest

from support.stores import exported_world, import_rows


@pytest.fixture
def world(tmp_path, make_engine):
    """A home with a living document (two revisions) and a record, and its JSON Lines export."""
    return exported_world(tmp_path, make_engine)


def a_new_record(rows) -> dict:
    record = next(r for r in rows if r["type"] == "record")
    return {**record, "record_id": f"rec-{uuid.uuid4().hex}", "body": "Flew to Porto on 9 June."}


@pytest.mark.parametrize("kind, field, value", [
    ("document", "body", "The user writes code in Vim."),
    ("document", "title", "Code editor"),
    ("document", "audience", "team"),
    ("document", "memory_class", "evidence"),
    ("record", "body", "Flew to Lisbon on 4 May."),
    ("record", "boundary", "home"),
    ("revision", "body", "The user writes code in Emacs."),
])
def test_a_row_changed_under_a_stored_id_is_an_error_naming_its_line_and_nothing_is_imported(
        world, tmp_path, capsys, kind, field, value):
    rows = [dict(r) for r in world["rows"]]
    line, row = next((n, r) for n, r in enumerate(rows, 1) if r["type"] == kind)
    new = a_new_record(rows)  # of the stored scope (a copy of the changed record would be of another)
    row[field] = value
    code, out = import_rows(capsys, world["home"], [*rows, new], tmp_path / "changed.jsonl")
    assert code == 1 and "nothing was imported: 1 problem(s)" in out
    what = f"revision {row['revision']} of {row['document_id']}" if kind == "revision" else (
        row["document_id"] if kind == "document" else row["record_id"])
    assert f"line {line}: {what} is stored with a different {field}: an import never changes a stored memory" in out
    engine, sid = world["engine"], world["sid"]
    got = {i.id: i for i in engine.get(sid, [world["doc"], world["rec"]]).items}
    assert got[world["doc"]].body == "The user writes code in Helix with gruvbox." and got[world["doc"]].title == "Editor"
    assert got[world["rec"]].body == "Flew to Lisbon on 3 May."
    assert engine.get(sid, [new["record_id"]]).items == []  # all or nothing
    assert [r["body"] for r in engine.revisions(sid, world["doc"])][-1] == "The user writes code in Helix."


def test_rows_stored_as_they_are_are_skipped_and_the_new_ones_imported(world, tmp_path, capsys):
    new = a_new_record(world["rows"])
    code, out = import_rows(capsys, world["home"], [*world["rows"], new], tmp_path / "again.jsonl")
    assert code == 0 and re.search(r"imported 1 memor(y|ies)\b", out) and "skipped 2 already present" in out
    assert [i.body for i in world["engine"].get(world["sid"], [new["record_id"]]).items] == ["Flew to Porto on 9 June."]


def test_a_memory_deleted_since_the_export_stays_deleted_and_is_skipped(world, tmp_path, capsys):
    engine, sid = world["engine"], world["sid"]
    engine.update(sid, world["doc"], delete=True)
    code, out = import_rows(capsys, world["home"], world["rows"], tmp_path / "old.jsonl")
    assert code == 0 and "skipped 2 already present" in out
    assert engine.get(sid, [world["doc"]]).items == []
