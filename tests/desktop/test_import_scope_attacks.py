"""A hostile JSON Lines file cannot plant what no write makes: a memory nobody sees that blocks its
claim for good, a memory or edge hung on another scope's anchor, or a source session of another
scope whose turns an erase would then blank (found by an attack on the import)."""

from __future__ import annotations

import json
import uuid

import pytest

from keepmind.engine import InvalidInput
from support.stores import exported_world, import_rows


@pytest.fixture
def world(tmp_path, make_engine):
    return exported_world(tmp_path, make_engine, anchor="Editor")


def doc_like(rows, **changes) -> dict:
    document = next(r for r in rows if r["type"] == "document")
    return {**document, "document_id": f"doc-{uuid.uuid4().hex}", "revision": 1,
            "body": "I am allergic to peanuts.", "title": "Peanuts", **changes}


@pytest.mark.parametrize("field, value, said", [
    ("sensitivity", "secret", "sensitivity is 'secret'"),
    ("author_audience", "public", "author_audience is 'public'"),
])
def test_a_memory_no_reader_sees_is_refused_and_its_claim_stays_learnable(world, tmp_path, capsys, field, value,
                                                                          said):
    planted = doc_like(world["rows"], **{field: value})
    code, out = import_rows(capsys, world["home"], [*world["rows"], planted], tmp_path / "planted.jsonl")
    assert code == 1 and said in out
    engine, sid = world["engine"], world["sid"]
    kept = engine.store(sid, "Peanuts", "I am allergic to peanuts.")
    assert kept.id is not None and [m.body for m in engine.get(sid, [kept.id]).items] == ["I am allergic to peanuts."]


def test_a_team_memory_on_a_personal_anchor_is_refused(world, tmp_path, capsys):
    rows = [dict(r) for r in world["rows"]]
    anchor = next(r for r in rows if r["type"] == "anchor")
    assert (anchor["audience"], anchor["boundary"]) == ("personal", "work")
    planted = doc_like(rows, audience="team", author_audience="team", anchor_id=anchor["anchor_id"],
                       session_id=None, provenance_json="{}")
    code, out = import_rows(capsys, world["home"], [*rows, planted], tmp_path / "linked.jsonl")
    assert code == 1 and f"anchor_id {anchor['anchor_id']} is an anchor of another scope (personal/work)" in out


def test_a_source_session_of_another_scope_is_refused_and_an_erase_never_blanks_one(world, tmp_path, capsys):
    engine = world["engine"]
    private = engine.open_session("personal", "work", title="private chat")
    engine.add_turn(private, user="My therapist says my medication is sertraline.", assistant="Noted.")
    planted = doc_like(world["rows"], audience="team", author_audience="team", anchor_id=None, session_id=private,
                       provenance_json=json.dumps({"session_id": private, "turns": [1]}))
    code, out = import_rows(capsys, world["home"], [*world["rows"], planted], tmp_path / "sourced.jsonl")
    assert code == 1 and f"session {private} is a session of another scope (personal/work)" in out
    # the same link made another way (as an import before this check could): erase stays in scope
    team = engine.open_session("team", "work")
    made = engine.store(team, "Deploys", "The team deploys on Tuesdays.").id
    engine.write(lambda conn: conn.execute("UPDATE memory_documents SET provenance_json=? WHERE document_id=?",
                                           (json.dumps({"session_id": private, "turns": [1]}), made)))
    engine.update(team, made, delete=True)
    [tomb] = [t for t in engine.deleted()[0] if t["memory_id"] == made]
    engine.erase(tomb["tombstone_id"])
    assert [t["user_text"] for t in engine.turns(private)] == ["My therapist says my medication is sertraline."]
    with pytest.raises(InvalidInput):
        engine.erase(tomb["tombstone_id"])  # erased once: the tombstone says so
