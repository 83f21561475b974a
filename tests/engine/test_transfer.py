"""Export then import gives identical memories; Markdown and OpenClaw-style memory."""

import json

import pytest

from keepmind.engine import open_engine, transfer
from keepmind.engine.clock import DAY_MS
from keepmind.engine.settings import defaults
from keepmind.engine.store import Relation


def snapshot(eng) -> dict:
    """Every stored row of every memory table, as comparable data."""
    out = {}
    with eng.db.snapshot() as conn:
        for kind, row in transfer.export_rows(conn):
            out.setdefault(kind, []).append(row)
    return {k: sorted(v, key=lambda r: json.dumps(r, sort_keys=True)) for k, v in out.items()}


def populate(eng, clock):
    s = eng.open_session("personal", "work")
    t = eng.open_session("team", "work")
    doc = eng.store(s, "Airline", "member of KLM Flying Blue", anchor="user",
                    relations=[Relation("member_of", "Flying Blue")], aliases=["KLM"], facets=["travel"],
                    provenance={"turns": [1, 2], "external": [{"kind": "file", "ref": "notes.md"}]},
                    authored_at=clock() - 5 * DAY_MS)
    clock.advance(1000)
    eng.update(s, doc.id, old_text="KLM", new_text="KLM (Air France-KLM)")
    rec = eng.store(s, "Trip", "Amsterdam on 3 May", memory_class="evidence")
    clock.advance(1000)
    eng.update(s, rec.id, new_content="Amsterdam on 4 May")
    gone = eng.store(t, "Wrong", "the office is in Paris")
    eng.update(t, gone.id, delete=True)
    eng.store(s, "Home airport", "AMS", anchor="user", relations=[Relation("home_airport", "AMS")])
    clock.advance(1000)
    eng.store(s, "Home airport", "RTM now", anchor="user", relations=[Relation("home_airport", "RTM")])
    eng.store(t, "Trace", "ran tests", memory_class="trace")


def test_jsonl_export_import_roundtrip_is_identical(tmp_path, clock):
    src = open_engine(tmp_path / "a", settings=defaults(), clock=clock, start_workers=False)
    populate(src, clock)
    out = tmp_path / "export.jsonl"
    exported = transfer.export(src, out)
    stats = src.stats()
    # live memories as stats counts them; the deleted document and the record's first version travel too
    assert (exported.memories, exported.deleted, exported.earlier) == (stats["documents"] + stats["records"], 1, 1)
    assert all(json.loads(line) for line in out.read_text().splitlines())
    dst = open_engine(tmp_path / "b", settings=defaults(), clock=clock, start_workers=False)
    report = transfer.import_path(dst, out)
    assert report == {"format": "jsonl", "imported": exported.memories, "skipped": 0, "deleted": exported.deleted,
                      "earlier": exported.earlier, "erased": 0, "errors": []}  # counted as the export counted them
    before, after = snapshot(src), snapshot(dst)
    assert after == before
    assert set(before) == {"anchor", "document", "revision", "record", "edge", "tombstone"}
    # the FTS index was rebuilt by the triggers: search works on the imported copy
    s = dst.open_session("personal", "work")
    assert [i.title for i in dst.find(s, "amsterdam")] == ["Trip"]
    assert transfer.import_path(dst, out)["skipped"] == exported.memories  # idempotent
    src.close()
    dst.close()


def test_bad_jsonl_imports_nothing_and_names_the_lines(tmp_path, engine):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "document", "document_id": "doc-1"}\nnot json\n{"type": "alien"}\n')
    report = transfer.import_path(engine, bad)
    assert report["imported"] == 0
    assert any("line 2" in e for e in report["errors"]) and any("line 3" in e for e in report["errors"])
    assert engine.stats()["documents"] == 0


def test_markdown_export_writes_one_file_per_anchor(tmp_path, engine, clock):
    populate(engine, clock)
    folder = transfer.export(engine, tmp_path / "md", fmt="markdown")
    assert not folder.single_file
    names = sorted(p.name for p in (tmp_path / "md").iterdir())
    assert names == ["unanchored.md", "user.md"]
    user = (tmp_path / "md" / "user.md").read_text()
    assert "member of KLM (Air France-KLM) Flying Blue" in user and "home_airport → " in user
    assert "until" not in user  # a retired edge is history too
    # a correction's earlier text is left out unless asked for: Markdown is the export people pass on
    assert "revision 1" not in user and "earlier revisions" not in user and "KLM Flying Blue" not in user
    transfer.export(engine, tmp_path / "md-history", fmt="markdown", history=True)
    with_history = (tmp_path / "md-history" / "user.md").read_text()
    assert "revision 1" in with_history and "home_airport → AMS" in with_history and "until" in with_history


def test_markdown_export_to_a_path_ending_in_md_writes_one_file(tmp_path, engine, clock):
    populate(engine, clock)
    one = transfer.export(engine, tmp_path / "out" / "all.md", fmt="markdown")
    assert one.single_file and (tmp_path / "out" / "all.md").is_file()
    text = (tmp_path / "out" / "all.md").read_text()
    assert "# user" in text and "# Unanchored memories" in text and "member of KLM (Air France-KLM)" in text
    assert "the office is in Paris" not in text  # deleted: not in the readable export


def test_openclaw_markdown_is_queued_unit_by_unit_and_curated_like_everything_else(tmp_path, engine):
    root = tmp_path / "openclaw"
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text(
        "# Memory\n\n## Preferences\n- Prefers dark mode in every editor\n- Drinks coffee black\n\n"
        "## Work\nWorks at Acme on the billing service.\nOn call every other week.\n")
    (root / "memory" / "2026-03-02.md").write_text("- Decided to migrate CI to GitHub Actions\n- Drinks coffee black\n")
    report = engine.import_path(root, audience="personal", boundary="work")
    assert (report["format"], report["queued"], report["errors"]) == ("markdown", 5, [])
    assert list(report["checkpoints"].values()) == ["MEMORY.md:4", "MEMORY.md:5", "MEMORY.md:8",
                                                     "memory/2026-03-02.md:1", "memory/2026-03-02.md:2"]
    assert not engine.import_outcome(report["checkpoints"])["done"]
    engine.drain_checkpoints()
    outcome = engine.import_outcome(report["checkpoints"])
    assert outcome["done"] and outcome["counts"]["kept"] == 4 and outcome["skipped_reasons"] == {"already stored": 1}
    s = engine.open_session("personal", "work")
    (dark,) = engine.find(s, "dark mode")
    assert dark.title == "Preferences: Prefers dark mode in every editor"
    assert dark.provenance["external"][0] == {"kind": "file", "ref": "MEMORY.md", "line": 4, "section": "Preferences"}
    assert dark.source == "import" and "section:Preferences" in dark.facets
    (ci,) = engine.find(s, "github actions")
    assert ci.provenance["external"][0]["ref"] == "memory/2026-03-02.md"
    assert ci.authored_at == 1772409600000  # 2026-03-02T00:00:00Z
    (acme,) = engine.find(s, "billing")
    assert acme.body == "Works at Acme on the billing service.\nOn call every other week."
    again = engine.import_path(root, audience="personal", boundary="work")
    engine.drain_checkpoints()
    assert engine.import_outcome(again["checkpoints"])["skipped_reasons"] == {"already stored": 5}


def test_import_of_missing_path_is_a_clear_error(tmp_path, engine):
    from keepmind.engine.errors import InvalidInput
    with pytest.raises(InvalidInput, match="does not exist"):
        transfer.import_path(engine, tmp_path / "nope.jsonl")


def test_a_merged_and_renamed_graph_survives_export_and_import(tmp_path, make_engine):
    from keepmind.engine import transfer

    src = make_engine(tmp_path / "src")
    sid = src.open_session("personal", "work")
    src.store(sid, "Anna", "Anna is the user's sister.", anchor="Anna", anchor_type="person")
    src.store(sid, "Annie", "Annie plays the cello.", anchor="Annie", anchor_type="person")
    scope = src.scope(sid)
    by_name = {a.name: a.id for a in src.anchors(scope)}
    src.merge_anchors(scope, by_name["Annie"], by_name["Anna"])
    out = tmp_path / "all.jsonl"
    transfer.export(src, out)
    dst = make_engine(tmp_path / "dst")
    report = transfer.import_path(dst, out)
    assert report["errors"] == [] and report["imported"] == 2
    dscope = dst.scope(dst.open_session("personal", "work"))
    (anna,) = [a for a in dst.anchors(dscope) if a.name == "Anna"]
    assert anna.memories == 2
    assert [a.name for a in dst.anchors(dscope, query="annie")] == ["Anna"]  # the old name is an alias
    [merge] = dst.anchor_history(dscope, anna.id)["merges"]  # what it moved is not in the file
    assert "came with an import" in merge["undo_blocked"]
    [mine] = src.anchor_history(scope, by_name["Anna"])["merges"]
    assert mine["undo_blocked"] is None


def _graph(engine) -> set[tuple]:
    with engine.db.snapshot() as conn:
        return {tuple(r) for r in conn.execute(
            "SELECT s.canonical_name, e.relation, t.canonical_name, e.valid_to IS NULL FROM memory_edges e"
            " JOIN memory_anchors s ON s.anchor_id = e.from_anchor_id"
            " JOIN memory_anchors t ON t.anchor_id = e.to_anchor_id").fetchall()}


def test_edges_imported_onto_a_person_already_known_keep_one_current_value(tmp_path, clock):
    """Madrid said here, Lisbon then Porto in the file: one place Anna lives in now, one sister edge."""
    def say(engine, text, place):
        engine.store(engine.open_session("personal", "default"), "", text, anchor="Anna", anchor_type="person",
                     relations=[Relation("sister", "Anna", "person", exclusive=False, source="User",
                                         source_type="person"),
                                Relation("lives_in", place, "place", source="Anna", source_type="person")])

    src = open_engine(tmp_path / "a", settings=defaults(), clock=clock, start_workers=False)
    say(src, "My sister Anna lives in Lisbon.", "Lisbon")
    clock.advance(86_400_000)
    say(src, "Anna moved to Porto.", "Porto")
    transfer.export(src, tmp_path / "a.jsonl")
    src.close()
    clock.advance(-10 * 86_400_000)  # said here before the move the file records
    dst = open_engine(tmp_path / "d", settings=defaults(), clock=clock, start_workers=False)
    say(dst, "My sister Anna lives in Madrid.", "Madrid")
    transfer.import_path(dst, tmp_path / "a.jsonl")
    graph = _graph(dst)
    dst.close()
    assert {e for e in graph if e[1] == "lives_in" and e[3]} == {("Anna", "lives_in", "Porto", 1)}
    assert [e for e in graph if e[1] == "sister"] == [("User", "sister", "Anna", 1)]


def test_markdown_gives_an_anchor_with_edges_and_no_memory_its_page(tmp_path, engine):
    s = engine.open_session("personal", "work")
    engine.store(s, "Anna", "My sister Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                 relations=[Relation("sister", "Anna", "person", False, "User", "person"),
                            Relation("lives_in", "Lisbon", "place", True, "Anna", "person")])
    transfer.export(engine, tmp_path / "md", fmt="markdown")
    names = sorted(p.name for p in (tmp_path / "md").iterdir())
    assert names == ["anna.md", "user.md"]  # Lisbon says nothing of its own: no page
    user = (tmp_path / "md" / "user.md").read_text()
    assert user.startswith("# User") and "- sister → Anna" in user
    assert "- lives_in → Lisbon" in (tmp_path / "md" / "anna.md").read_text()


def test_markdown_history_says_an_edge_deleted_as_wrong_or_corrected_was_never_so(tmp_path, engine, clock):
    """An export with history said "spouse → Sam (since 1 Dec until 4 Dec)" for a marriage deleted
    as wrong, as if it had ended; the anchor page says it was never so, and so does the export now.
    A home that a later statement replaced still held until then."""
    s = engine.open_session("personal", "work")
    clock.now = 1_796_083_200_000  # 2026-12-01T00:00:00Z
    wrong = engine.store(s, "Spouse", "User is married to Sam.", anchor="user",
                         relations=[Relation("spouse", "Sam", "person")]).id
    engine.store(s, "Home airport", "AMS", anchor="user", relations=[Relation("home_airport", "AMS")])
    clock.advance(3 * DAY_MS)
    engine.update(s, wrong, delete=True)
    engine.store(s, "Home airport", "RTM now", anchor="user", relations=[Relation("home_airport", "RTM")])
    transfer.export(engine, tmp_path / "md", fmt="markdown", history=True)
    user = (tmp_path / "md" / "user.md").read_text()
    [spouse] = [line for line in user.splitlines() if line.startswith("- spouse")]
    assert "never so" in spouse and "deleted as wrong 2026-12-04" in spouse and "until" not in spouse
    [ams] = [line for line in user.splitlines() if "home_airport → AMS" in line]
    assert "until 2026-12-04" in ams and "never so" not in ams
    transfer.export(engine, tmp_path / "now", fmt="markdown")
    assert "spouse" not in (tmp_path / "now" / "user.md").read_text()  # as it stands: not there at all
