"""`keepmind memories deleted|restore|erase`: what was deleted as wrong, from a shell, as the
browser's Deleted page shows it; erase for good asks first on a terminal and refuses without
--yes anywhere else; with Keepmind running, restore and erase go through it."""

from __future__ import annotations

import io

import pytest

from keepmind.desktop.cli import main
from keepmind.engine import Scope, open_engine
from keepmind.engine.settings import defaults

QUIET = defaults().with_overrides(memory__embeddings__enabled=False, memory__embeddings__auto_download=False)
SECRET = "zanzibarquokka"
LOCAL = Scope.viewer("personal", None)


class Terminal(io.StringIO):
    """What a person types at a terminal."""

    def isatty(self) -> bool:
        return True


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def deleted_in(eng, clock) -> dict:
    """Store two memories and delete both as wrong, a minute apart: Card first, then Office."""
    sid = eng.open_session("personal", "work")
    made = {}
    for title, text in (("Card", f"My bank card hint is the {SECRET}."), ("Office", "The office is in Paris.")):
        memory_id = eng.store(sid, title, text).id
        eng.update(sid, memory_id, delete=True, source="ui")
        clock.advance(60_000)
        made[title] = memory_id
    tombs = {t["memory_id"]: t["tombstone_id"] for t in eng.deleted()[0]}
    return {title: (memory_id, tombs[memory_id]) for title, memory_id in made.items()}


@pytest.fixture
def store(tmp_path, clock):
    """A data dir with two memories deleted as wrong, and their (memory id, tombstone id) by title."""
    home = tmp_path / "home"
    with open_engine(home, settings=QUIET, clock=clock, start_workers=False) as eng:
        made = deleted_in(eng, clock)
    return home, made


def standing(home) -> dict:
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        return {t["tombstone_id"]: t for t in eng.deleted()[0]}


def test_deleted_lists_tombstone_id_when_scope_and_title_newest_first(store, capsys):
    home, made = store
    code, out, err = run(capsys, "memories", "deleted", "--home", str(home))
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2 and err == ""
    assert lines[0].startswith(f"{made['Office'][1]}  deleted 2026-01-01T00:01:00") and lines[0].endswith(
        "  personal/work  Office")
    assert lines[1].startswith(f"{made['Card'][1]}  deleted 2026-01-01T00:00:00") and lines[1].endswith("  Card")
    code, out, err = run(capsys, "memories", "deleted", "--limit", "1", "--json", "--home", str(home))
    assert code == 0 and out.count("\n") == 1 and f'"tombstone_id": "{made["Office"][1]}"' in out
    assert '"content": "The office is in Paris."' in out and '"erased_at": null' in out
    assert err.strip() == "the first 1 shown: there are more (--limit N shows more)"


def test_nothing_deleted_says_so(tmp_path, capsys):
    home = tmp_path / "home"
    open_engine(home, settings=QUIET, start_workers=False).close()
    assert run(capsys, "memories", "deleted", "--home", str(home))[:2] == (0, "nothing has been deleted\n")


def test_restore_brings_the_memory_back(store, capsys):
    home, made = store
    memory_id, tomb = made["Office"]
    code, out, _ = run(capsys, "memories", "restore", tomb, "--home", str(home))
    assert code == 0
    assert out.strip() == (f"restored \u201cOffice\u201d as {memory_id} in personal/work: it is recalled again, and the same "
                           "fact may be learnt again")
    assert tomb not in standing(home)
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        assert [i.id for i in eng.find(LOCAL, "office Paris")] == [memory_id]
    code, _, err = run(capsys, "memories", "restore", tomb, "--home", str(home))
    assert code == 2 and err.startswith(f"error: no deleted memory {tomb}: `keepmind memories deleted` lists them")


def test_erase_refuses_without_yes_when_stdin_is_not_a_terminal(store, capsys, monkeypatch):
    home, made = store
    tomb = made["Card"][1]
    monkeypatch.setattr("sys.stdin", io.StringIO("erase\n"))  # piped: even the word is not a person's answer
    code, out, err = run(capsys, "memories", "erase", tomb, "--home", str(home))
    assert code == 2 and out == ""
    assert err.strip() == (f"error: not erased: erasing for good cannot be undone, so it asks first, and stdin is not "
                           f"a terminal to ask on: add --yes to erase {tomb} without asking")
    assert standing(home)[tomb]["erased_at"] is None and SECRET in standing(home)[tomb]["body"]


def test_erase_on_a_terminal_asks_first_and_only_the_word_erase_goes_on(store, capsys, monkeypatch):
    home, made = store
    tomb = made["Card"][1]
    monkeypatch.setattr("sys.stdin", Terminal("yes\n"))
    code, out, err = run(capsys, "memories", "erase", tomb, "--home", str(home))
    assert code == 1 and out == ""
    assert "Erase for good \u201cCard\u201d (deleted 2026-01-01T00:00:00" in err and "personal/work)?" in err
    assert "This cannot be undone. Type erase to go on: " in err and err.endswith("not erased (to go on, type the word erase)\n")
    assert standing(home)[tomb]["erased_at"] is None

    monkeypatch.setattr("sys.stdin", Terminal("erase\n"))
    code, out, err = run(capsys, "memories", "erase", tomb, "--home", str(home))
    assert code == 0 and "This cannot be undone. Type erase to go on: " in err
    assert out.splitlines() == [f"erased {tomb} for good: its text is gone from 1 revision",
                                "the database file was rewritten without it (VACUUM)"]
    assert standing(home)[tomb]["erased_at"] is not None


def test_erase_with_yes_erases_for_good_and_then_nothing_is_left_to_restore(store, capsys):
    home, made = store
    tomb = made["Card"][1]
    code, out, _ = run(capsys, "memories", "erase", tomb, "--yes", "--home", str(home))
    assert code == 0 and out.splitlines()[1] == "the database file was rewritten without it (VACUUM)"
    for name in ("keepmind.db", "keepmind.db-wal"):
        path = home / name
        assert not path.exists() or SECRET.encode() not in path.read_bytes(), name
    code, out, _ = run(capsys, "memories", "deleted", "--home", str(home))
    erased_line = next(line for line in out.splitlines() if line.startswith(tomb))
    assert "  personal/work  (erased)  erased for good 2026-" in erased_line and "Card" not in out
    code, _, err = run(capsys, "memories", "restore", tomb, "--home", str(home))
    assert (code, err) == (2, "error: erased for good: nothing left to restore\n")
    code, _, err = run(capsys, "memories", "erase", tomb, "--yes", "--home", str(home))
    assert code == 2 and err.startswith(f"error: {tomb} was erased for good already (2026-")


@pytest.mark.parametrize("action", [("restore",), ("erase", "--yes")])
def test_an_unknown_tombstone_id_is_one_line_that_says_where_to_look(store, capsys, action):
    home, _ = store
    code, out, err = run(capsys, "memories", action[0], "tomb-" + "0" * 32, *action[1:], "--home", str(home))
    assert code == 2 and out == ""
    assert err == (f"error: no deleted memory tomb-{'0' * 32}: `keepmind memories deleted` lists them by tombstone id "
                   "(a restored memory is no longer there)\n")


def recorded(calls: list, verb: str, act):
    def spied(tombstone_id, **kw):
        calls.append(verb)
        return act(tombstone_id, **kw)
    return spied


def test_with_keepmind_running_restore_and_erase_go_through_it(tmp_path, clock, start_live, capsys, monkeypatch):
    live = start_live(tmp_path / "home", clock=clock)
    calls = []
    for verb in ("restore", "erase"):  # a spy on the running engine: the CLI asks it, not a store of its own
        monkeypatch.setattr(live.engine, verb, recorded(calls, verb, getattr(live.engine, verb)))
    try:
        made = deleted_in(live.engine, clock)
        home = live.daemon.home
        office_id, office = made["Office"]
        code, out, _ = run(capsys, "memories", "restore", office, "--home", str(home))
        assert code == 0 and out.startswith(f"restored \u201cOffice\u201d as {office_id} ")
        sid = live.engine.open_session("personal", "work")
        assert [i.id for i in live.engine.find(sid, "office Paris")] == [office_id]  # the running one recalls it

        card = made["Card"][1]
        code, out, _ = run(capsys, "memories", "erase", card, "--yes", "--home", str(home))
        assert code == 0 and out.splitlines() == [f"erased {card} for good: its text is gone from 1 revision",
                                                  "the database file was rewritten without it (VACUUM)"]
        assert calls == ["restore", "erase"]
        [row] = live.engine.deleted()[0]
        assert row["tombstone_id"] == card and row["erased_at"] is not None
        with live.engine.db.snapshot() as conn:  # the running engine's own rows: erased by it
            assert conn.execute("SELECT COUNT(*) FROM memory_revisions WHERE body LIKE ?",
                                (f"%{SECRET}%",)).fetchone()[0] == 0
    finally:
        live.stop()


def test_delete_from_a_shell_leaves_a_tombstone_and_says_how_to_undo_it(tmp_path, capsys):
    """A person could add a memory from a shell but not delete one without a browser or an agent."""
    home = tmp_path / "home"
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        memory_id = eng.store(sid, "Office", "The office is in Paris.").id
    code, out, _ = run(capsys, "memories", "delete", memory_id, "--reason", "it moved to Lyon", "--home", str(home))
    [tomb] = standing(home).values()
    assert code == 0 and tomb["memory_id"] == memory_id and tomb["source"] == "ui"
    t = tomb["tombstone_id"]
    assert out.strip() == (f"deleted \u201cOffice\u201d as wrong: it is not recalled or learnt again; `keepmind "
                           f"memories restore {t}` brings it back, `keepmind memories erase {t}` erases its text for good")
    code, out, _ = run(capsys, "memories", "deleted", "--home", str(home))
    assert out.strip().endswith("Office  (it moved to Lyon)")  # the reason given, in the list
    code, _, err = run(capsys, "memories", "delete", memory_id, "--home", str(home))
    assert code == 2 and "a memory deleted as wrong is listed by `keepmind memories deleted`" in err
    code, _, err = run(capsys, "memories", "show", memory_id, "--home", str(home))
    assert code == 2 and "a memory deleted as wrong is listed by `keepmind memories deleted`" in err
    code, _, err = run(capsys, "memories", "erase", memory_id, "--yes", "--home", str(home))
    assert code == 2 and f"{memory_id} is not a tombstone id: a deletion is named by one starting with tomb-" in err
