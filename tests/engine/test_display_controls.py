"""Memory text and names lose the characters that carry no words and only change how the text
around them shows: bidi overrides and isolates (U+202E showed "txt.exe" as "exe.txt" and flipped a
page's own sentence after an anchor's name) and C0 controls other than tabs and line breaks."""

from __future__ import annotations

import pytest

from keepmind.engine import InvalidInput


def test_a_memory_is_stored_without_bidi_overrides_and_stray_controls(engine, personal):
    stored = engine.store(personal, "Report \u202eexe.txt", "Open the file\u202e txt.exe\x07 now.\x0cNext line\x1b[31m.")
    item = engine.get(personal, [stored.id]).items[0]
    assert item.title == "Report exe.txt"
    assert item.body == "Open the file txt.exe now.\nNext line[31m."


def test_tabs_line_breaks_and_joiners_stay(engine, personal):
    text = "Col\tumn\nline two\r\nfamily \U0001F468\u200d\U0001F469\u200d\U0001F467"
    stored = engine.store(personal, "Kept", text)
    assert engine.get(personal, [stored.id]).items[0].body == text.strip()


def test_an_anchor_renamed_with_an_override_keeps_only_its_words(engine, personal):
    engine.store(personal, "OPO", "The user flies from OPO.", anchor="OPO")
    scope = engine.scope(personal)
    anchor = next(a for a in engine.anchors(scope) if a.name == "OPO")
    assert engine.rename_anchor(scope, anchor.id, "Francisco S\u00e1 Carneiro \u202e") == "Francisco S\u00e1 Carneiro"
    with pytest.raises(InvalidInput, match="empty"):
        engine.rename_anchor(scope, anchor.id, "\u202e\u2066")


def test_a_nul_is_refused_in_an_anchors_new_name_and_in_an_imported_row(engine, personal, tmp_path):
    engine.store(personal, "OPO", "The user flies from OPO.", anchor="OPO")
    scope = engine.scope(personal)
    anchor = next(a for a in engine.anchors(scope) if a.name == "OPO")
    with pytest.raises(InvalidInput, match="NUL"):
        engine.rename_anchor(scope, anchor.id, "OPO\x00x\u202e")
    assert [a.name for a in engine.anchors(scope)] == ["OPO"]
    export = tmp_path / "export.jsonl"
    engine.export(export)
    tampered = export.read_text().replace('"canonical_name": "OPO"', '"canonical_name": "OPO\\u0000x"')
    assert tampered != export.read_text()
    export.write_text(tampered)
    report = engine.import_path(export)
    assert report["imported"] == 0 and any("canonical_name holds a NUL character" in e for e in report["errors"])
