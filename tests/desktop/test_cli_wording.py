"""What the CLI says reads as written for a person: counts agree with their nouns, and a message
names a thing once."""

from __future__ import annotations

import json

from keepmind.desktop.cli import main
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults
from support.stores import exported_world

QUIET = defaults().with_overrides(memory__embeddings__auto_download=False, memory__embeddings__enabled=False)


def test_status_of_a_stopped_keepmind_counts_in_words(tmp_path, capsys):
    home = tmp_path / "home"
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        eng.store(sid, "Trip", "Flew to Lisbon on 3 May.", memory_class="evidence")
    assert main(["status", "--home", str(home)]) == 3
    line = capsys.readouterr().out.splitlines()[1]
    assert line == "the store holds 0 documents, 1 record, 0 anchors and 0 edges; 0 checkpoints wait"


def test_a_malformed_memory_id_is_named_once(tmp_path, capsys):
    home = tmp_path / "home"
    open_engine(home, settings=QUIET, start_workers=False).close()
    assert main(["memories", "show", "doc-nope", "--home", str(home)]) == 2  # as every other refused input
    err = capsys.readouterr().err
    assert err.startswith("error: 'doc-nope' is not a memory id") and err.count("doc-nope") == 1


def test_a_memory_that_is_not_there_is_said_without_a_session_the_cli_does_not_have(tmp_path, capsys):
    home = tmp_path / "home"
    open_engine(home, settings=QUIET, start_workers=False).close()
    missing = "doc-" + "0" * 32
    assert main(["memories", "show", missing, "--home", str(home)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: no memory {missing}: check the id") and "session" not in err
    assert main(["recall", "explain", "rcp-nope", "--home", str(home)]) == 2
    assert "is not a recall receipt id" in capsys.readouterr().err  # a typo, not "it may have been pruned"
    assert main(["checkpoints", "retry", "cp-nope", "--home", str(home)]) == 2


def test_an_import_row_with_an_unusable_boundary_says_so_once(tmp_path, make_engine, capsys):
    world = exported_world(tmp_path, make_engine)
    rows = [dict(r) for r in world["rows"]]
    line, row = next((n, r) for n, r in enumerate(rows, 1) if r["type"] == "document")
    row["boundary"] = "wo\u200brk"
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["import", str(path), "--home", str(tmp_path / "fresh")]) == 1
    out = capsys.readouterr().out
    assert f"line {line}: boundary is not usable: the boundary holds a control or invisible character" in out


def test_a_cut_memories_list_says_there_are_more(tmp_path, capsys):
    home = tmp_path / "home"
    with open_engine(home, settings=QUIET, start_workers=False) as engine:
        sid = engine.open_session("personal", "work")
        for n in range(4):
            engine.store(sid, f"Fact {n}", f"The user keeps fact {n}.")
    assert main(["memories", "list", "--limit", "3", "--home", str(home)]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 3 and "the first 3 shown: there are more" in err
    assert main(["memories", "list", "--limit", "4", "--home", str(home)]) == 0
    assert "there are more" not in capsys.readouterr().err


def test_why_nothing_says_a_session_that_was_given_everything_already_as_such():
    """A walk's explain said both "no memory this session may read shared a word with the message"
    and "3 already injected earlier in this session": the first was untrue."""
    from keepmind.desktop.commands.explain import why_nothing

    given = why_nothing({"counts": {"considered": 0, "excluded": 3}, "degraded": ["progressive_recall_exhausted"]})
    assert given == ["every memory the message reached was injected earlier in this session",
                     "3 already injected earlier in this session (again after a compaction)"]
    none = why_nothing({"counts": {"considered": 0}})
    assert none == ["no memory this session may read shared a word with the message or came near it in meaning"]
