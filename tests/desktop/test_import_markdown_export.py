"""Keepmind's own Markdown export imports back as the memories it holds: each memory's body whole,
under its title, section (its anchor) and authored time; the export's metadata lines (anchor, id,
class, authored, provenance, edges) and the earlier revisions are left out and listed, never
made into memories. A file or folder that is not an export is cut by meaning as before."""

from __future__ import annotations

import json

import pytest

from keepmind.desktop.cli import main as cli
from keepmind.engine import mdimport, transfer
from keepmind.engine.mdunits import units
from keepmind.engine.store import Relation

PLAN = ("The plan for the move:\n\n# Packing\n\n## Books first\n\n- boxes from the shop\n- labels\n\n"
        "<details><summary>earlier revisions</summary>\n\nnot a revision block: part of the note")


@pytest.fixture
def source(make_engine, tmp_path, clock):
    """A store with an anchored person (an edge to a place), an edited document, a note whose body is
    Markdown with headings and a <details> of its own, and an evidence record, in boundary Café."""
    eng = make_engine(tmp_path / "src", memory__embeddings__enabled=False)
    sid = eng.open_session("personal", "Café")
    eng.store(sid, "Sister", "Anna is the user's sister; she lives in Porto.", anchor="Anna", anchor_type="person",
              relations=[Relation("lives_in", "Porto", "place")])
    editor = eng.store(sid, "Editor", "The user edits in Vim.\n\n- with a dark theme\n- and relative numbers",
                       anchor="Editor").id
    clock.advance(1000)
    eng.update(sid, editor, old_text="Vim", new_text="Helix")
    eng.store(sid, "Moving house", PLAN)
    eng.store(sid, "Trip", "Flew to Lisbon on 3 May.", memory_class="evidence")
    return eng


def live(eng, boundary="Café") -> dict[str, tuple[str, int]]:
    """title -> (body, authored_at) of the memories in personal/`boundary`."""
    sid = eng.open_session("personal", boundary)
    return {m.title: (m.body, m.authored_at) for m in eng.list_memories(sid, limit=100)}


@pytest.mark.parametrize("output", ["all.md", "pages"])
def test_a_markdown_export_imports_back_as_its_memories_and_nothing_else(source, make_engine, tmp_path, output):
    exported = transfer.export(source, tmp_path / output, fmt="markdown", history=True)
    assert exported.memories == 4 and exported.single_file == output.endswith(".md")
    plan = mdimport.plan_markdown(tmp_path / output, audience="personal", boundary="Café")
    assert plan.errors == []
    expected = live(source)
    assert sorted((p.title, p.content) for _, p, _, _ in plan.planned) == sorted(
        (title, body) for title, (body, _) in expected.items())
    assert sorted(reason for _, reason in plan.not_memories) == ["anchor", "anchor", "earlier revision", "edge"]
    sections = {p.title: p.facets for _, p, _, _ in plan.planned}
    assert sections["Sister"] == ("section:Anna",) and sections["Trip"] == ()

    dst = make_engine(tmp_path / "dst", memory__embeddings__enabled=False)
    report = transfer.import_path(dst, tmp_path / output, audience="personal", boundary="Café")
    dst.drain_checkpoints()
    assert dst.import_outcome(report["checkpoints"])["counts"]["kept"] == 4
    assert live(dst) == expected  # bodies as stored, and when each was said
    texts = json.dumps(live(dst))
    for metadata in ("anc-", "doc-", "rec-", "provenance", "class:", "revision 1", "lives_in", "Vim"):
        assert metadata not in texts
    # importing it again keeps nothing twice
    again = transfer.import_path(dst, tmp_path / output, audience="personal", boundary="Café")
    dst.drain_checkpoints()
    counts = dst.import_outcome(again["checkpoints"])["counts"]
    assert (counts["kept"], counts["skipped"]) == (0, 4) and len(live(dst)) == 4


def test_the_import_command_says_what_of_the_export_it_left_out(source, tmp_path, capsys):
    transfer.export(source, tmp_path / "all.md", fmt="markdown", history=True)
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"memory.embeddings.enabled": False}))
    assert cli(["import", str(tmp_path / "all.md"), "--home", str(home), "--boundary", "Café"]) == 0
    out = capsys.readouterr().out
    assert "4 units of meaning" in out and "kept 4 as new memories" in out
    assert "not memories (left out): 2 anchors, 1 edge, 1 earlier revision" in out


def test_markdown_that_only_looks_like_an_export_is_cut_by_meaning():
    text = ("# Anna\n\n- id: `doc-0123456789abcdef0123456789abcdef` · class: durable_fact · personal / work\n"
            "- Anna likes tea\n")
    assert [u.kind for u in units(text).units] == ["item", "item"]  # no anchor line: OpenClaw rules
    openclaw = "# Memory\n\n## Sister\n\n- Anna lives in Porto\n"
    assert [(u.title, u.kind) for u in units(openclaw).units] == [("Sister: Anna lives in Porto", "item")]
