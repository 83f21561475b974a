"""A Markdown import into a store that is not empty: a unit a living document of its scope already
says is skipped whichever other documents share its words, and finding what already says a unit
costs the same however many documents its scope holds, even with the planner's statistics
gathered when the store held a few memories in another boundary (they once made every unit run
the full-text query once per document of the scope: 400 bullets took minutes instead of seconds)."""

from __future__ import annotations

from keepmind.engine.db import rows
from keepmind.engine.writepath import similarity
from keepmind.engine.writepath.checkpoints import Lease

STEPS = 100  # the progress handler is called every STEPS virtual-machine instructions


def import_units(engine, path, units: list[str], boundary: str = "work") -> dict:
    path.write_text("## Notes\n" + "".join(f"- {unit}\n" for unit in units))
    report = engine.import_path(path, audience="personal", boundary=boundary)
    assert report["errors"] == [] and report["queued"] == len(units)
    engine.drain_checkpoints()
    return {**engine.import_outcome(report["checkpoints"]), "checkpoints": list(report["checkpoints"])}


def test_a_unit_a_document_of_its_scope_says_is_skipped_however_many_others_share_its_words(engine, tmp_path):
    # 30 documents hold every word of the unit but not in its order, stored before the one that says it
    others = [f"Green tea number {i} is what the user likes" for i in range(30)]
    first = import_units(engine, tmp_path / "first.md", [*others, "Every morning the user likes green tea with honey"])
    assert first["counts"]["kept"] == 31
    again = import_units(engine, tmp_path / "again.md", ["The user likes green tea"])
    assert again["counts"]["skipped"] == 1 and again["skipped_reasons"] == {"already said by another memory": 1}
    with engine.db.snapshot() as conn:
        [said] = rows(conn, "SELECT document_id FROM memory_documents WHERE body LIKE 'Every morning%'")
        [event] = rows(conn, "SELECT action, reason, targets_json FROM curation_events WHERE checkpoint_id=?",
                       (again["checkpoints"][0],))
    assert (event["action"], event["reason"]) == ("skip", "contained")
    assert event["targets_json"] == f'["{said["document_id"]}"]'
    other_scope = import_units(engine, tmp_path / "team.md", ["The user likes green tea"], boundary="home")
    assert other_scope["counts"]["kept"] == 1  # a document of another boundary says nothing here


def said_steps(engine, content: str) -> int:
    """Virtual-machine instructions (the full-text index's own reads included) already_said takes."""
    lease = Lease(checkpoint_id="cp-" + "0" * 32, owner="test", expires_at=0, attempts=1, trigger="markdown-import",
                  priority=0, session_id=None, audience="personal", boundary="work", payload_json="{}", created_at=0)
    steps = [0]

    def count() -> bool:
        steps[0] += STEPS
        return False  # go on

    with engine.db.snapshot() as conn:
        conn.set_progress_handler(count, STEPS)
        try:
            assert similarity.already_said(conn, lease, content, engine.now()) is None
        finally:
            conn.set_progress_handler(None)
    return steps[0]


def test_finding_what_is_already_said_costs_the_same_in_a_scope_of_10_or_210_documents(make_engine, tmp_path):
    home = tmp_path / "home"
    seeding = make_engine(home, memory__embeddings__enabled=False)
    import_units(seeding, tmp_path / "seed.md", [f"Seed fact {i} about the office printer" for i in range(7)],
                 boundary="other")
    seeding.close()
    engine = make_engine(home, memory__embeddings__enabled=False)  # opening it gathers the planner's statistics
    with engine.db.snapshot() as conn:  # ...of a store of 7 memories, all in one boundary
        [stat] = rows(conn, "SELECT stat FROM sqlite_stat1 WHERE idx='memory_documents_scope'")
    assert stat["stat"].startswith("7 7 7 ")  # 7 rows; 7 per boundary, 7 per boundary and audience
    unit = "Quokkas eat xylophone berries"  # words no document holds: the index answers at once
    import_units(engine, tmp_path / "a.md", [f"Fact {i} of the first batch about the user" for i in range(10)])
    small = said_steps(engine, unit)
    import_units(engine, tmp_path / "b.md", [f"Fact {i} of the second batch about the user" for i in range(200)])
    large = said_steps(engine, unit)
    assert large < 1.5 * small, (small, large)  # not once per document of the scope
