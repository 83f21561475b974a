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
    ({"boundary": "*"}, "line 1: boundary is not usable: '*' is reserved"),
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



def import_as_json(capsys, home, path, *more) -> tuple[int, dict]:
    code = cli(["import", str(path), "--home", str(home), "--json", *more])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, json.loads(captured.out)


def test_with_json_rows_with_errors_print_the_json_report_naming_the_lines(stored, tmp_path, capsys):
    rec = row_of(stored["rows"], "record", record_id=stored["rec"])
    path = write_jsonl(tmp_path / "f.jsonl", [stored["rows"][0], rec, {**rec, "record_id": "rec-nope"}])
    code, report = import_as_json(capsys, stored["home"], path)
    assert code == 1
    assert report["format"] == "jsonl" and report["imported"] == 0
    assert [e.split(":")[0] for e in report["errors"]] == ["line 3"]
    unchanged(stored)


def test_with_json_every_refusal_is_json_naming_what_to_fix(stored, tmp_path, capsys):
    home = stored["home"]
    code, report = import_as_json(capsys, home, tmp_path / "missing.jsonl")
    assert code == 2 and report == {
        "errors": [f"{tmp_path / 'missing.jsonl'} does not exist: give a .jsonl export, a Markdown file, a folder or a .zip"]}
    (tmp_path / "empty").mkdir()
    code, report = import_as_json(capsys, home, tmp_path / "empty")
    assert code == 2 and "holds no MEMORY.md" in report["errors"][0]
    notes = tmp_path / "notes.md"
    notes.write_text("## Deploys\n- Deploys go out on Tuesdays\n")
    code, report = import_as_json(capsys, home, notes, "--boundary", "*")
    assert code == 2 and "reserved" in report["errors"][0]
    notes.write_text("## Keys\n- password: hunter2-Correct-Horse-9\n")  # a Markdown import's errors
    code, report = import_as_json(capsys, home, notes)
    assert code == 1 and report["format"] == "markdown" and report["queued"] == 0
    assert [e.split(":")[0] for e in report["errors"]] == ["notes.md line 2"]
    assert "hunter2" not in json.dumps(report)
    (tmp_path / "a-file").write_text("")  # a data dir that cannot be made
    code, report = import_as_json(capsys, tmp_path / "a-file" / "home", notes)
    assert code == 2 and report["errors"][0].startswith(f"cannot use the data dir {tmp_path / 'a-file' / 'home'}")
    unchanged(stored)


def test_an_export_of_a_newer_format_version_is_refused_saying_which_versions_and_to_upgrade(stored, tmp_path,
                                                                                              capsys):
    header, *rows = stored["rows"]
    assert header["type"] == "header" and header["version"] == 1
    newer = write_jsonl(tmp_path / "newer.jsonl", [{**header, "version": 2}, *rows])
    assert cli(["import", newer, "--home", str(tmp_path / "fresh")]) == 2
    captured = capsys.readouterr()
    said = ("this export is format version 2, newer than this Keepmind reads (format version 1): "
            "upgrade Keepmind to import it")
    assert captured.err.splitlines()[-1] == f"error: {said}" and captured.out == ""
    assert import_as_json(capsys, tmp_path / "fresh", newer) == (2, {"errors": [said]})
    for odd in ("2", None, 0, True):
        code, report = import_as_json(capsys, tmp_path / "fresh", write_jsonl(tmp_path / "odd.jsonl", [
            {**header, "version": odd}, *rows]))
        assert code == 1 and report["errors"] == [f"line 1: unknown export version {str(odd)!r}"]
    # this version imports, and so does a header without one
    same = write_jsonl(tmp_path / "same.jsonl", [header, *rows])
    assert import_as_json(capsys, tmp_path / "fresh", same)[1]["imported"] == 2
    older = write_jsonl(tmp_path / "older.jsonl", [{k: v for k, v in header.items() if k != "version"}, *rows])
    assert import_as_json(capsys, tmp_path / "other", older)[1]["imported"] == 2
