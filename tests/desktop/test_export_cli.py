"""`keepmind export` counts what `keepmind stats` counts, says what else it carried, and writes one
Markdown file for a path ending in .md and a folder otherwise (and its help says so)."""

from __future__ import annotations

import json

from keepmind.desktop.cli import build_parser, main
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults


def test_export_counts_the_live_memories_stats_counts_and_names_the_deleted_one(tmp_path, capsys):
    home = tmp_path / "home"
    with open_engine(home, settings=defaults(), start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        eng.store(sid, "Airline", "The user flies with KLM.")
        eng.store(sid, "Trip", "Flew to Lisbon on 3 May.", memory_class="evidence")
        wrong = eng.store(sid, "Office", "The office is in Paris.").id
        eng.update(sid, wrong, delete=True)
    assert main(["stats", "--json", "--home", str(home)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["documents"] + stats["records"] == 2
    out = tmp_path / "all.jsonl"
    assert main(["export", "--home", str(home), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == (
        f"exported 2 memories to {out} (with 1 deleted memory, kept so its tombstone holds)")
    assert main(["export", "--home", str(home), "--format", "markdown", "-o", str(tmp_path / "all.md")]) == 0
    assert capsys.readouterr().out.strip() == f"exported 2 memories to {tmp_path / 'all.md'}"
    text = (tmp_path / "all.md").read_text()
    assert (tmp_path / "all.md").is_file() and "KLM" in text and "Lisbon" in text and "Paris" not in text
    assert main(["export", "--home", str(home), "--format", "markdown", "-o", str(tmp_path / "md")]) == 0
    assert capsys.readouterr().out.strip() == (
        f"exported 2 memories to {tmp_path / 'md'} (a folder: one file per anchor)")
    assert [p.name for p in (tmp_path / "md").iterdir()] == ["unanchored.md"]


def test_export_help_says_where_markdown_goes():
    sub = build_parser()._subparsers._group_actions[0].choices["export"]
    assert "one file when PATH ends in .md, else a folder" in " ".join(sub.format_help().split())


def test_markdown_leaves_a_corrections_old_text_out_unless_asked(tmp_path, capsys):
    home = tmp_path / "home"
    with open_engine(home, settings=defaults(), start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        doc = eng.store(sid, "Home", "The user lives in Trondheim.").id
        eng.update(sid, doc, old_text="Trondheim", new_text="Bergen")
    assert main(["export", "--home", str(home), "--format", "markdown", "-o", str(tmp_path / "now.md")]) == 0
    now = (tmp_path / "now.md").read_text()
    assert "Bergen" in now and "Trondheim" not in now
    assert main(["export", "--home", str(home), "--format", "markdown", "--with-history",
                 "-o", str(tmp_path / "all.md")]) == 0
    assert "Trondheim" in (tmp_path / "all.md").read_text()
    capsys.readouterr()
    assert main(["export", "--home", str(home), "--with-history", "-o", str(tmp_path / "x.jsonl")]) == 2
    assert "JSON Lines always keeps earlier revisions" in capsys.readouterr().err
