"""`keepmind import` of a JSON Lines file: every row is checked like API input, may link only to
rows of the same file, never revises or supersedes a stored memory, and errors name the line."""

from __future__ import annotations

import json
import uuid

import pytest

from keepmind.desktop.cli import main as cli
from keepmind.engine.memory import MAX_BODY_CHARS
from support.secret_corpus import database_bytes, secret_corpus
from support.stores import exported_world


def hexid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


@pytest.fixture
def stored(tmp_path, make_engine):
    """A home with a living document (two revisions) and a record, and its JSON Lines export."""
    return exported_world(tmp_path, make_engine, anchor='user')


def row_of(rows, kind, **match):
    return next(r for r in rows if r["type"] == kind and all(r.get(k) == v for k, v in match.items()))


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def run_import(capsys, home, path) -> tuple[int, str]:
    code = cli(["import", path, "--home", str(home)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out + captured.err


def unchanged(world) -> None:
    engine, sid = world["engine"], world["sid"]
    got = {i.id: i for i in engine.get(sid, [world["doc"], world["rec"]]).items}
    assert got[world["doc"]].body == "The user writes code in Helix with gruvbox." and got[world["doc"]].revision == 2
    assert got[world["rec"]].body == "Flew to Lisbon on 3 May." and got[world["rec"]].supersedes is None
    assert [i.id for i in engine.find(sid, "lisbon")] == [world["rec"]]
    assert [r["revision"] for r in engine.revisions(sid, world["doc"])] == [2, 1]


def test_a_row_that_would_supersede_a_stored_record_is_refused(stored, tmp_path, capsys):
    rec = row_of(stored["rows"], "record", record_id=stored["rec"])
    forged = {**rec, "record_id": hexid("rec"), "supersedes_record_id": stored["rec"],
              "body": "Flew to Reykjavik on 3 May.", "title": "Trip"}
    code, out = run_import(capsys, stored["home"], write_jsonl(tmp_path / "f.jsonl", [rec, forged]))
    assert code == 1
    assert f"line 2: it would supersede {stored['rec']}, which is stored: an import never changes a stored memory" in out
    unchanged(stored)
    # without the stored record in the file, the link points outside the file
    code, out = run_import(capsys, stored["home"], write_jsonl(tmp_path / "g.jsonl", [forged]))
    assert code == 1 and f"line 1: supersedes_record_id {stored['rec']} is not a record of this file" in out
    unchanged(stored)


def test_a_revision_row_never_revises_a_stored_document(stored, tmp_path, capsys):
    doc = row_of(stored["rows"], "document", document_id=stored["doc"])
    revision = {**row_of(stored["rows"], "revision", document_id=stored["doc"], revision=2), "revision": 99,
                "body": "The user writes code in Notepad."}
    code, out = run_import(capsys, stored["home"], write_jsonl(tmp_path / "r.jsonl", [doc, revision]))
    assert code == 1 and "line 2: it would add revision 99 to" in out and "which is stored" in out
    unchanged(stored)


@pytest.mark.parametrize("change,expected", [
    ({"body": "x" * 5_000_007}, f"line 1: body is 5000007 characters; the limit is {MAX_BODY_CHARS}"),
    ({"title": ["a", "list"]}, "line 1: title must be a string"),
    ({"document_id": "doc-1"}, "line 1: document_id must be an id like doc-<32 hex digits>"),
    ({"boundary": "*"}, "line 1: boundary '*' is reserved"),
    ({"audience": "everyone"}, "line 1: audience must be one of personal, team, public"),
    ({"confidence": "high"}, "line 1: confidence must be a number from 0 to 1"),
    ({"anchor_id": None, "provenance_json": "[1]"}, "line 1: provenance_json must be a JSON object"),
    ({"evil": 1}, "line 1: unknown field(s) 'evil' for a document"),
])
def test_a_bad_field_is_an_error_naming_the_line_and_nothing_is_imported(stored, tmp_path, capsys, change, expected):
    doc = {**row_of(stored["rows"], "document", document_id=stored["doc"]), "document_id": hexid("doc"),
           "anchor_id": None, **change}
    code, out = run_import(capsys, stored["home"], write_jsonl(tmp_path / "bad.jsonl", [doc]))
    assert code == 1 and expected in out, out
    assert stored["engine"].stats()["documents"] == 1


def test_a_row_holding_a_secret_is_refused_by_kind_and_its_value_is_stored_nowhere(stored, tmp_path, capsys):
    doc = row_of(stored["rows"], "document", document_id=stored["doc"])
    rows, cores = [], []
    for sentence, core in secret_corpus():
        rows.append({**doc, "document_id": hexid("doc"), "anchor_id": None, "body": sentence,
                     "title": "Credentials"})
        cores.append(core)
    code, out = run_import(capsys, stored["home"], write_jsonl(tmp_path / "s.jsonl", rows))
    assert code == 1 and "line 1: this document holds secret-like content (" in out
    assert not any(core in out for core in cores)
    assert stored["engine"].stats()["documents"] == 1
    assert [c for c in cores if c.encode() in database_bytes(stored["home"])] == []


def test_links_only_inside_the_file_and_names_join_stored_anchors(stored, tmp_path, capsys, make_engine):
    # a document pointing at the stored anchor by id links outside the file
    doc = row_of(stored["rows"], "document", document_id=stored["doc"])
    stray = {**doc, "document_id": hexid("doc"), "body": "The user also writes Rust."}
    code, out = run_import(capsys, stored["home"], write_jsonl(tmp_path / "a.jsonl", [stray]))
    assert code == 1 and f"line 1: anchor_id {doc['anchor_id']} is not an anchor of this file" in out
    # another home's export: its anchor "user" becomes the stored anchor of that name
    other_home = tmp_path / "other"
    other = make_engine(other_home)
    other.store(other.open_session("personal", "work"), "Tea", "The user drinks green tea.", anchor="user")
    export = tmp_path / "other.jsonl"
    assert cli(["export", "--home", str(other_home), "-o", str(export)]) == 0
    code, out = run_import(capsys, stored["home"], str(export))
    assert code == 0 and f"imported 1 memory from {export}, skipped 0 already present" in out
    engine, sid = stored["engine"], stored["sid"]
    [tea] = engine.find(sid, "green tea")
    [editor] = engine.find(sid, "helix")
    assert tea.anchor_id == editor.anchor_id
    assert run_import(capsys, stored["home"], str(export)) == (
        0, f"imported 0 memories from {export}, skipped 1 already present\n")
    unchanged(stored)


def test_lines_that_are_not_rows_are_named(stored, tmp_path, capsys):
    path = tmp_path / "junk.jsonl"
    path.write_bytes(b'{"type": ["document"]}\n[1, 2]\n\xff\xfe\n' + b"[" * 100_000 + b"\n")
    code, out = run_import(capsys, stored["home"], str(path))
    assert code == 1
    for expected in ("line 1: expected an object with a 'type'", "line 2: expected an object with a 'type'",
                     "line 3: not UTF-8 text", "line 4: "):
        assert expected in out
