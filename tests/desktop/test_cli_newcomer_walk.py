"""What a newcomer's walk of the CLI found: a memory can be corrected from a shell (`memories edit`),
an empty path or boundary is a slip to refuse, not the current folder or the default; an export to
a folder or the empty path says so and leaves no half-written copy of every memory; an export of an
empty store is not imported as if it held something; and Keepmind's Markdown export goes back to
the scope its memories came from, where the memories deleted there stay deleted."""

from __future__ import annotations

import json

import pytest

from keepmind.desktop.cli import main
from keepmind.engine import Scope, open_engine, transfer
from keepmind.engine.settings import defaults

QUIET = defaults().with_overrides(memory__embeddings__enabled=False, memory__embeddings__auto_download=False)
LOCAL = Scope.viewer("personal", None)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"memory.embeddings.enabled": False}))
    return home


def one_memory(home, text="User lives in Lisbon.", boundary="default") -> str:
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        return eng.store(eng.open_session("personal", boundary), "Home", text).id


def bodies(home, boundary=None) -> list[str]:
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        return sorted(m.body for m in eng.list_memories(LOCAL, limit=100) if boundary in (None, m.boundary))


def test_edit_corrects_a_memory_by_a_wording_or_whole_and_keeps_its_history(home, capsys):
    memory_id = one_memory(home)
    code, out, _ = run(capsys, "memories", "edit", memory_id, "--replace", "Lisbon", "Porto", "--home", str(home))
    assert code == 0 and out.splitlines()[0] == "\u201cHome\u201d corrected (1 replacement)"
    assert bodies(home) == ["User lives in Porto."]
    code, out, _ = run(capsys, "memories", "edit", memory_id, "--text", "User lives in Braga.", "--title",
                       "Where I live", "--home", str(home))
    assert code == 0 and bodies(home) == ["User lives in Braga."]
    code, out, _ = run(capsys, "memories", "show", memory_id, "--home", str(home))
    assert "Where I live" in out and "3 revisions:" in out and out.count("  ui") == 2  # the person's edits


@pytest.mark.parametrize(("argv", "says"), [
    ((), "say what to change: --text NEW, --replace OLD NEW, or --title TITLE"),
    (("--text", "a", "--replace", "b", "c"), "give --text (the whole new text) or --replace OLD NEW, not both"),
    (("--replace", "Madrid", "Porto"), "Madrid"),  # not in its text: nothing changes, and it says what is missing
    # in the command's words, not the API's ("new_content is empty: … use delete")
    (("--text", " "), "--text is empty: to remove a memory, use `keepmind memories delete "),
    (("--title", ""), "--title is empty: give the memory a title"),
])
def test_edit_refuses_what_it_cannot_do_in_one_line_and_changes_nothing(home, capsys, argv, says):
    memory_id = one_memory(home)
    code, out, err = run(capsys, "memories", "edit", memory_id, *argv, "--home", str(home))
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert bodies(home) == ["User lives in Lisbon."]


def test_edit_of_a_memory_that_is_not_there_says_where_to_look(home, capsys):
    code, _, err = run(capsys, "memories", "edit", "doc-" + "0" * 32, "--text", "x", "--home", str(home))
    assert code == 2 and "`keepmind memories list` shows them" in err


def test_with_keepmind_running_edit_goes_through_it(tmp_path, clock, start_live, capsys, monkeypatch):
    live = start_live(tmp_path / "home", clock=clock)
    calls = []
    update = live.engine.update
    monkeypatch.setattr(live.engine, "update", lambda *a, **kw: calls.append(kw) or update(*a, **kw))
    try:
        sid = live.engine.open_session("personal", "work")
        memory_id = live.engine.store(sid, "Home", "User lives in Lisbon.").id
        code, out, _ = run(capsys, "memories", "edit", memory_id, "--replace", "Lisbon", "Porto",
                           "--home", str(live.daemon.home))
        assert code == 0 and out.startswith("\u201cHome\u201d corrected")
        assert [(c["old_text"], c["new_text"]) for c in calls] == [("Lisbon", "Porto")]  # the running one did it
        assert [m.body for m in live.engine.find(sid, "where does the user live")] == ["User lives in Porto."]
    finally:
        live.stop()


def test_an_empty_path_or_boundary_is_refused_not_read_as_here_or_default(home, tmp_path, capsys, monkeypatch):
    (tmp_path / "MEMORY.md").write_text("- The user likes tea.\n")
    monkeypatch.chdir(tmp_path)  # "" would be this folder, which holds a MEMORY.md
    code, _, err = run(capsys, "import", "", "--home", str(home))
    assert code == 2 and "give what to import" in err
    code, _, err = run(capsys, "import", "MEMORY.md", "--boundary", " ", "--home", str(home))
    assert code == 2 and "--boundary is empty" in err
    code, _, err = run(capsys, "memories", "add", "I like tea.", "--boundary", "", "--home", str(home))
    assert code == 2 and "--boundary is empty" in err
    assert bodies(home) == []


@pytest.mark.parametrize("output", ["", ".", "folder"])
def test_an_export_to_a_folder_or_nowhere_says_so_and_leaves_nothing_behind(home, tmp_path, capsys, monkeypatch,
                                                                             output):
    one_memory(home)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    code, _, err = run(capsys, "export", "-o", output, "--home", str(home))
    assert code == 2 and ("is a folder: give the file to write" in err or "give the file to export to" in err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "home"]  # no .tmp holding every memory
    assert list((tmp_path / "folder").iterdir()) == []


def test_a_failed_export_removes_its_half_written_file(home, tmp_path, monkeypatch):
    one_memory(home)
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        monkeypatch.setattr(transfer, "export_rows", lambda conn: iter([("document", {"document_id": "doc-1", "x": object()})]))
        with pytest.raises(TypeError):
            transfer.export(eng, tmp_path / "all.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_an_export_into_folders_that_do_not_exist_says_it_made_them(home, tmp_path, capsys):
    one_memory(home)
    out = tmp_path / "backups" / "2026" / "all.jsonl"
    code, said, _ = run(capsys, "export", "-o", str(out), "--home", str(home))
    assert code == 0 and out.is_file()
    assert said.splitlines()[1] == f"(the folder {tmp_path / 'backups'} did not exist: it was made for this export)"
    code, said, _ = run(capsys, "export", "-o", str(out), "--home", str(home))
    assert code == 0 and len(said.splitlines()) == 1  # it exists now


def test_an_export_of_an_empty_store_is_not_imported_as_if_it_held_something(home, tmp_path, capsys):
    out = tmp_path / "empty.jsonl"
    assert run(capsys, "export", "-o", str(out), "--home", str(home))[0] == 0
    code, _, err = run(capsys, "import", str(out), "--home", str(home))
    assert code == 2 and "empty.jsonl holds no memories (only an export header)" in err


def test_a_markdown_export_goes_back_where_it_came_from_and_what_was_deleted_stays_deleted(home, tmp_path,
                                                                                           capsys):
    kept = one_memory(home, "User lives in Porto.", boundary="work")
    wrong = one_memory(home, "User is a plumber.", boundary="work")
    pages = tmp_path / "all.md"
    assert run(capsys, "export", "--format", "markdown", "--with-history", "-o", str(pages), "--home", str(home))[0] == 0
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        eng.update(LOCAL, wrong, delete=True, source="ui")  # deleted after the export was made
        eng.update(LOCAL, kept, delete=True, source="ui")
        [tomb] = [t for t in eng.deleted()[0] if t["memory_id"] == kept]
        eng.restore(tomb["tombstone_id"])
    code, out, _ = run(capsys, "import", str(pages), "--home", str(home))
    assert code == 0 and "into personal/work: 2 units of meaning" in out and "note:" not in out
    assert bodies(home) == ["User lives in Porto."]  # the plumber stays deleted; Porto is not stored twice

    code, out, _ = run(capsys, "import", str(pages), "--boundary", "default", "--home", str(home))
    assert code == 0 and "into personal/default" in out
    assert "note: these memories were exported from personal/work; in personal/default the memories deleted " \
           "there are not refused" in " ".join(out.split())


def test_a_markdown_export_of_several_scopes_puts_each_memory_back_in_its_own(home, tmp_path, capsys):
    """An export that names several scopes went whole into the default scope (only an export of one
    scope went back): the team memory became a personal one, the home one readable from default."""
    one_memory(home, "User lives in Porto.", boundary="home")
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        eng.store(eng.open_session("team", "work"), "Database", "The team decided to use Postgres.")
    pages = tmp_path / "all.md"
    assert run(capsys, "export", "--format", "markdown", "-o", str(pages), "--home", str(home))[0] == 0
    other = tmp_path / "other"
    code, out, _ = run(capsys, "import", str(pages), "--home", str(other))
    assert code == 0 and "into personal/home, team/work: 2 units of meaning" in out and "note:" not in out
    with open_engine(other, settings=QUIET, start_workers=False) as eng:
        found = sorted((m.audience, m.boundary, m.body) for m in eng.list_memories(LOCAL, limit=10))
    assert found == [("personal", "home", "User lives in Porto."), ("team", "work", "The team decided to use Postgres.")]


def test_a_jsonl_import_says_when_the_scope_flags_did_nothing(home, tmp_path, capsys):
    """A walk imported a JSON Lines export with --audience team --boundary other: the rows kept their
    own scope, as they should, and nothing said the flags were not used."""
    one_memory(home, "User lives in Porto.", boundary="home")
    out = tmp_path / "all.jsonl"
    assert run(capsys, "export", "-o", str(out), "--home", str(home))[0] == 0
    other = tmp_path / "other"
    code, said, _ = run(capsys, "import", str(out), "--audience", "team", "--boundary", "elsewhere",
                        "--home", str(other))
    assert code == 0 and "note: --audience and --boundary did nothing: a JSON Lines export keeps each memory's " \
                         "own audience and boundary" in said
    code, said, _ = run(capsys, "import", str(out), "--home", str(tmp_path / "third"))
    assert code == 0 and "note:" not in said
