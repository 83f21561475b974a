"""An export of any store imports back into an empty data dir with nothing lost that matters: a
proposal rejected in review (its tombstone names the proposal), memories deleted as wrong, edited
ones, team ones, and names longer than new writes allow (stores made before the limit)."""

from __future__ import annotations

import json

from keepmind.engine import transfer
from keepmind.engine.memory import MAX_TITLE_CHARS, normalize_text

CLAIM = "User usually flies out of Boston Logan."


def snapshot(eng) -> dict:
    """Every exported row of every kind, as comparable data."""
    out: dict[str, list] = {}
    with eng.db.snapshot() as conn:
        for kind, row in transfer.export_rows(conn):
            out.setdefault(kind, []).append(row)
    return {k: sorted(v, key=lambda r: json.dumps(r, sort_keys=True)) for k, v in out.items()}


def reject_in_review(eng, clock) -> str:
    """The observer proposes CLAIM, a person rejects it on the Review page; the proposal's id."""
    sid = eng.open_session("personal", "work")
    eng.add_turn(sid, user="I usually fly out of Boston Logan.", assistant="Noted.")
    clock.advance(90_000)
    eng.writepath.scheduler.run_once(clock())
    [waiting] = eng.review_queue()
    assert waiting["content"] == CLAIM
    eng.reject_proposal(waiting["checkpoint_id"])
    return waiting["checkpoint_id"]


def populate(eng, clock) -> str:
    proposal = reject_in_review(eng, clock)
    mine, team = eng.open_session("personal", "work"), eng.open_session("team", "work")
    wrong = eng.store(mine, "Office", "The office is in Paris.")
    eng.update(mine, wrong.id, delete=True)
    edited = eng.store(mine, "Editor", "The user edits in Vim.", anchor="Editor")
    clock.advance(1000)
    eng.update(mine, edited.id, old_text="Vim", new_text="Helix")
    eng.store(team, "Standup", "The team's standup is at 9:30.")
    return proposal


def test_an_export_with_a_proposal_rejected_in_review_imports_into_an_empty_data_dir(make_engine, clock, tmp_path):
    src = make_engine(tmp_path / "src", memory__curation__review=True)
    proposal = populate(src, clock)
    out = tmp_path / "all.jsonl"
    transfer.export(src, out)

    dst = make_engine(tmp_path / "dst", memory__curation__review=True)
    report = transfer.import_path(dst, out)
    assert report["errors"] == [] and report["imported"] == 2
    assert report["deleted"] == 1  # the deleted one travels, for its tombstone

    assert snapshot(dst) == snapshot(src)  # memories, revisions, tombstones, the rejected proposal, audiences
    assert {"document", "revision", "tombstone", "rejected_proposal"} <= set(snapshot(dst))
    mine, team = dst.open_session("personal", "work"), dst.open_session("team", "work")
    assert sorted(m.body for m in dst.list_memories(mine)) == ["The team's standup is at 9:30.",
                                                                "The user edits in Helix."]
    assert [m.body for m in dst.list_memories(team)] == ["The team's standup is at 9:30."]
    # what was deleted or rejected is still away, and the Deleted list still says what it was
    deleted, _ = dst.deleted()
    assert sorted((t["source"], t["title"] or "") for t in deleted) == sorted(
        (t["source"], t["title"] or "") for t in src.deleted()[0])
    assert next(t for t in deleted if t["source"] == "review")["body"] == CLAIM
    assert dst.store(mine, "Airport", CLAIM).action == "tombstoned"
    assert dst.store(mine, "Office", "The office is in Paris.").action == "tombstoned"
    # and Restore puts the rejected proposal back in review, as it would have where it came from
    rejected = next(t for t in deleted if t["source"] == "review")
    assert dst.restore(rejected["tombstone_id"]) == proposal
    assert [w["content"] for w in dst.review_queue()] == [CLAIM]
    assert transfer.import_path(dst, out)["imported"] == 0  # importing it again changes nothing
    # an export with the rejection lifted (the proposal is back in review) imports too
    again = tmp_path / "again.jsonl"
    transfer.export(dst, again)
    third = make_engine(tmp_path / "third")
    assert transfer.import_path(third, again)["errors"] == []
    assert third.store(third.open_session("personal", "work"), "Airport", CLAIM).action == "created"


def test_an_export_made_before_rejected_proposals_travelled_still_imports_and_keeps_the_claim_away(
        make_engine, clock, tmp_path):
    src = make_engine(tmp_path / "src", memory__curation__review=True)
    reject_in_review(src, clock)
    out = tmp_path / "all.jsonl"
    transfer.export(src, out)
    lines = [line for line in out.read_text().splitlines() if json.loads(line)["type"] != "rejected_proposal"]
    older = tmp_path / "older.jsonl"
    older.write_text("\n".join(lines) + "\n")

    dst = make_engine(tmp_path / "dst")
    assert transfer.import_path(dst, older)["errors"] == []
    assert dst.store(dst.open_session("personal", "work"), "Airport", CLAIM).action == "tombstoned"


def test_an_anchor_named_before_names_were_held_to_a_titles_length_exports_and_imports(make_engine, tmp_path):
    src = make_engine(tmp_path / "src")
    sid = src.open_session("personal", "work")
    src.store(sid, "Colleague", "Ravi works at Globex.", anchor="Ravi", anchor_type="person")
    long_name = "Ravi " + "the colleague from the Globex office " * 14  # what a store made before could hold
    assert len(long_name) > MAX_TITLE_CHARS

    def rename(conn):
        conn.execute("UPDATE memory_anchors SET canonical_name=?, normalized_name=?",
                     (long_name, normalize_text(long_name)))

    src.write(rename)
    out = tmp_path / "all.jsonl"
    transfer.export(src, out)
    dst = make_engine(tmp_path / "dst")
    report = transfer.import_path(dst, out)
    assert report["errors"] == [] and report["imported"] == 1
    [anchor] = dst.anchors(dst.scope(dst.open_session("personal", "work")))
    assert anchor.name == long_name and anchor.memories == 1


def test_an_unusable_id_is_named_in_words_not_as_a_pattern(engine, tmp_path):
    bad = tmp_path / "bad.jsonl"
    row = {"type": "tombstone", "tombstone_id": "tomb-" + "0" * 32, "fingerprint": "a" * 64, "audience": "personal",
           "boundary": "work", "memory_id": "note-17", "created_at": 1}
    edge = {"type": "edge", "edge_id": "edge-" + "0" * 32, "from_anchor_id": "anc-" + "1" * 32, "relation": "knows",
            "to_anchor_id": "anc-" + "2" * 32, "audience": "personal", "boundary": "work", "confidence": 1,
            "asserted_by": "x", "valid_from": 1, "created_at": 1}
    bad.write_text(json.dumps(row) + "\n" + json.dumps(edge) + "\n")
    errors = transfer.import_path(engine, bad)["errors"]
    assert errors == [
        "line 1: memory_id must be an id like doc-<32 hex digits>, rec-<32 hex digits> or cp-<32 hex digits>",
        "line 2: asserted_by must be an id like doc-<32 hex digits> or rec-<32 hex digits>",
    ]
