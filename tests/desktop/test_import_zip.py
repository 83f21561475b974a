"""`keepmind import FILE.zip` takes what the browser's Import takes: the Markdown export the
Export page downloads (a zip of one page per anchor), a zip of an OpenClaw-style folder or of a
JSON Lines export, unpacked with the upload's checks (no path out of the archive, no link, under
server.max_upload_bytes) in the data dir and removed after; an empty file says it is empty."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from keepmind.desktop.cli import main as cli


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"memory.embeddings.enabled": False}))
    return home


def run(capsys, *argv) -> tuple[int, str]:
    code = cli(["import", *map(str, argv)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out + captured.err


def memories(make_engine, home, boundary):
    eng = make_engine(home)
    return sorted(m.body for m in eng.list_memories(eng.open_session("personal", boundary), limit=20))


def zipped(path, members: dict[str, bytes | str]):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_the_markdown_zip_the_export_page_downloads_imports_back(make_engine, tmp_path, home, capsys):
    src = make_engine(tmp_path / "src", memory__embeddings__enabled=False)
    sid = src.open_session("personal", "work")
    src.store(sid, "Sister", "Anna is the user's sister; she lives in Porto.", anchor="Anna", anchor_type="person")
    editor = src.store(sid, "Editor", "The user edits in Vim.", anchor="Editor").id
    src.update(sid, editor, old_text="Vim", new_text="Helix")
    src.store(sid, "Trip", "Flew to Lisbon on 3 May.", memory_class="evidence")
    folder = src.export_folder()
    made, name = src.export_file(folder, "markdown")  # what "Download the export" sends
    archive = tmp_path / "export_md.zip"
    archive.write_bytes(made.read_bytes())
    src.drop_export(folder)
    assert name.startswith("keepmind-markdown-") and len(zipfile.ZipFile(archive).namelist()) == 3

    code, out = run(capsys, archive, "--home", home, "--boundary", "work")
    assert code == 0, out
    assert "not UTF-8" not in out and "3 units of meaning" in out and "kept 3 as new memories" in out
    assert "not memories (left out): 2 anchors\n" in out  # the download holds no earlier revision ("Vim")
    assert "Vim" not in zipfile.ZipFile(archive).read("editor.md").decode()
    assert memories(make_engine, home, "work") == ["Anna is the user's sister; she lives in Porto.",
                                                   "Flew to Lisbon on 3 May.", "The user edits in Helix."]
    assert list((home / "imports").iterdir()) == []  # the unpacked copy is gone


def test_a_zip_of_an_openclaw_folder_or_of_a_jsonl_export_imports(make_engine, tmp_path, home, capsys):
    workspace = zipped(tmp_path / "workspace.zip", {
        "workspace/MEMORY.md": "# Preferences\n\n- I like green tea.\n",
        "workspace/memory/2026-03-02.md": "- Met Bruno about the release.\n"})
    code, out = run(capsys, workspace, "--home", home, "--boundary", "notes")
    assert code == 0 and "kept 2 as new memories" in out, out
    assert memories(make_engine, home, "notes") == ["I like green tea.", "Met Bruno about the release."]

    src = make_engine(tmp_path / "src")
    src.store(src.open_session("personal", "work"), "Seat", "Window seats, never the last row.")
    src.export(tmp_path / "all.jsonl")
    export = zipped(tmp_path / "export.zip", {"all.jsonl": (tmp_path / "all.jsonl").read_bytes()})
    code, out = run(capsys, export, "--home", tmp_path / "other")
    assert code == 0 and "imported 1 memory from" in out, out


@pytest.mark.parametrize("members, says", [
    ({"MEMORY.md": "- fine\n", "../escape.md": "- out of the folder\n"}, "a path that escapes the archive"),
    ({"/etc/MEMORY.md": "- absolute\n"}, "a path that escapes the archive"),
    ({"MEMORY.md": "- " + "a" * 2_000_000 + "\n"}, "unpacks to more than 1,048,576 bytes"),
    ({"notes.txt": "nothing here"}, "nothing to import was found"),
])
def test_a_zip_is_refused_as_the_browser_refuses_it_and_nothing_is_imported(make_engine, tmp_path, home, capsys,
                                                                             members, says):
    (home / "keepmind.json").write_text(json.dumps({"memory.embeddings.enabled": False,
                                                    "server.max_upload_bytes": 1_048_576}))
    code, out = run(capsys, zipped(tmp_path / "bad.zip", members), "--home", home, "--json")
    assert code == 2 and says in json.loads(out)["errors"][0], out
    assert memories(make_engine, home, "default") == []
    assert list((home / "imports").iterdir()) == []
    assert not (tmp_path / "escape.md").exists()


def test_a_zip_holding_a_link_is_refused(tmp_path, home, capsys):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        link = zipfile.ZipInfo("MEMORY.md")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    (tmp_path / "link.zip").write_bytes(buffer.getvalue())
    code, out = run(capsys, tmp_path / "link.zip", "--home", home, "--json")
    assert code == 2 and "a symbolic link" in json.loads(out)["errors"][0]


def test_an_empty_file_says_it_is_empty(tmp_path, home, capsys):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    code, out = run(capsys, tmp_path / "empty.jsonl", "--home", home, "--json")
    assert code == 2 and json.loads(out)["errors"] == ["empty.jsonl is empty: there is nothing to import in it"]
