"""A boundary is one name however its accents are encoded: "Café" typed (é, U+00E9) and "Café"
from a macOS folder name (e + U+0301) are the same boundary, and a store written before this
rule has its two spellings folded into one by migration 009."""

from __future__ import annotations

import json
import unicodedata

import apsw
import pytest

from keepmind.engine import Relation, open_engine
from keepmind.engine.policy import check_name
from keepmind.engine.settings import defaults

TYPED = "Caf\u00e9"  # NFC
FROM_A_FOLDER = "Cafe\u0301"  # NFD: the same text


def test_both_spellings_name_one_boundary(engine):
    assert check_name(FROM_A_FOLDER) == TYPED
    typed = engine.open_session("personal", TYPED)
    folder = engine.open_session("personal", FROM_A_FOLDER)
    stored = engine.store(folder, "Anna", "Anna lives in Lisbon.", anchor="Anna").id
    assert engine.scope(typed).boundary == engine.scope(folder).boundary == TYPED
    assert engine.memory(engine.scope(typed), stored).boundary == TYPED
    token = engine.create_token("cafe-only", "personal", [FROM_A_FOLDER])
    assert token.token.boundaries == (TYPED,)
    assert engine.open_session("personal", TYPED, token=token.token)


def boundaries_in(conn) -> set[str]:
    tables = [r[0] for r in conn.execute("SELECT m.name FROM sqlite_master m WHERE m.type='table' AND EXISTS"
                                         " (SELECT 1 FROM pragma_table_info(m.name) WHERE name='boundary')")]
    return {row[0] for t in tables for row in conn.execute(f"SELECT boundary FROM {t}")}


def test_a_store_written_in_both_spellings_is_folded_into_one_boundary(tmp_path, clock):
    home = tmp_path / "home"
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as engine:
        typed = engine.open_session("personal", TYPED)
        engine.store(typed, "Anna", "Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                     relations=[Relation("lives_in", "Lisbon", "place")])
        clock.advance(1000)
        later = engine.open_session("personal", "to-be-respelled")
        engine.store(later, "Anna's work", "Anna works at Acme.", anchor="Anna", anchor_type="person",
                     relations=[Relation("works_at", "Acme", "organisation")])
        engine.store(later, "Berlin", "The team meets in Berlin.", anchor="Berlin")
        engine.create_token("folder", "personal", ["to-be-respelled", TYPED])
    # What an older Keepmind wrote: the second session's rows under the folder's spelling.
    conn = apsw.Connection(str(home / "keepmind.db"))
    guard = next(conn.execute("SELECT sql FROM sqlite_master WHERE name='memory_records_no_update'"))[0]
    conn.execute("DROP TRIGGER memory_records_no_update")  # an older build stored them so at write time
    for (table,) in list(conn.execute("SELECT m.name FROM sqlite_master m WHERE m.type='table' AND EXISTS"
                                      " (SELECT 1 FROM pragma_table_info(m.name) WHERE name='boundary')")):
        conn.execute(f"UPDATE {table} SET boundary=? WHERE boundary='to-be-respelled'", (FROM_A_FOLDER,))
    conn.execute(guard)
    conn.execute("UPDATE api_tokens SET boundaries_json=? WHERE name='folder'",
                 (json.dumps([FROM_A_FOLDER, TYPED]),))
    conn.execute("DELETE FROM _migrations WHERE name='009_boundaries_in_nfc'")
    assert boundaries_in(conn) == {TYPED, FROM_A_FOLDER}
    conn.close()

    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as engine:
        with engine.db.snapshot() as c:
            assert boundaries_in(c) == {TYPED}
            assert next(c.execute("SELECT sql FROM sqlite_master WHERE name='memory_records_no_update'"))
            anchors = list(c.execute("SELECT anchor_id FROM memory_anchors WHERE normalized_name='anna'"))
        assert len(anchors) == 1
        scope = engine.scope(engine.open_session("personal", FROM_A_FOLDER))
        anna = anchors[0][0]
        bodies = sorted(m.body for m in engine.browse(scope).items if m.anchor_id == anna)
        assert bodies == ["Anna lives in Lisbon.", "Anna works at Acme."]
        assert sorted(e.relation for e in engine.edges(scope, anna)) == ["lives_in", "works_at"]
        assert engine.get_token("folder").boundaries == (TYPED,)
        assert unicodedata.is_normalized("NFC", engine.get_token("folder").boundaries[0])


def test_an_older_export_in_the_folder_spelling_imports_into_the_typed_boundary():
    from keepmind.engine.importrows import RowError, boundary

    assert boundary(FROM_A_FOLDER) == TYPED
    with pytest.raises(RowError, match="spaces"):
        boundary(f" {FROM_A_FOLDER}")


def test_a_listing_filtered_by_the_folder_spelling_finds_the_boundarys_memories(engine):
    from keepmind.engine.browse import MemoryFilter

    sid = engine.open_session("personal", TYPED)
    stored = engine.store(sid, "Anna", "Anna lives in Lisbon.").id
    scope = engine.viewer(engine.ensure_token(None).token)
    found = engine.browse(scope, flt=MemoryFilter(boundary=FROM_A_FOLDER)).items
    assert [m.id for m in found] == [stored]


def test_the_api_answers_a_new_session_with_the_boundary_as_stored(client, engine):
    local = engine.ensure_token(None)
    r = client.post("/api/v1/sessions", json={"audience": "personal", "boundary": FROM_A_FOLDER},
                    headers={"Authorization": f"Bearer {local.secret}"})
    assert r.status_code == 200 and r.get_json()["session"]["boundary"] == TYPED
