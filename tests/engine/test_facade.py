"""The Engine facade gives the outer layers everything they read and change: tokens, token-aware
scopes, the graph through time, listings, jobs and doctor, each through the visibility rule."""

from __future__ import annotations

import pytest

from keepmind.engine import InvalidInput, NotFound, Relation, Scope, ScopeError
from keepmind.engine.clock import DAY_MS


def test_tokens_through_the_facade(engine, clock):
    created = engine.create_token("agent", "team", ["work"])
    assert created.secret.startswith("km_")
    token = engine.verify_token(created.secret)
    assert token is not None and token.name == "agent" and token.boundaries == ("work",)
    assert engine.verify_token("km_not-a-real-secret") is None
    with pytest.raises(ScopeError):  # no wider than the caller
        engine.create_token("wider", "personal", by=token)
    assert [t.name for t in engine.list_tokens(by=token)] == ["agent"]
    engine.touch_token(token)
    engine.touch_token(token)  # at most once a minute: the second is not written
    engine.db.write(lambda conn: None)  # the queued touch has landed
    assert engine.get_token("agent").last_used_at == clock()
    assert engine.revoke_token("agent").revoked_at is not None
    assert engine.verify_token(created.secret) is None


def test_ensure_token_keeps_a_live_secret_and_replaces_a_dead_one(engine):
    first = engine.ensure_token(None)
    assert first is not None and first.token.name == "local" and first.token.audience_ceiling == "personal"
    assert engine.ensure_token(first.secret) is None
    engine.revoke_token("local")
    second = engine.ensure_token(first.secret)
    assert second is not None and second.token.name == "local" and second.token.id != first.token.id
    assert engine.ensure_token(None).token.name == "local-2"  # a second live one beside it takes another name


def test_a_token_scope_cuts_granted_boundaries_and_recall_refuses_what_it_withholds(make_engine):
    engine = make_engine(policy__cross_boundary_reads={"work": ["home", "oss"]})
    sid = engine.open_session("team", "work")
    narrow = engine.create_token("narrow", "team", ["work", "oss"]).token
    assert engine.scope(sid).extra_boundaries == ("home", "oss")
    scope = engine.scope(sid, token=narrow)
    assert scope.extra_boundaries == ("oss",) and scope.withheld_boundaries == ("home",)
    with pytest.raises(ScopeError, match="boundary 'home'"):
        engine.recall(sid, "anything at all", token=narrow)
    personal = engine.open_session("personal", "work")
    with pytest.raises(NotFound, match=f"^no session {personal}: open one first$"):
        engine.scope(personal, token=narrow)  # as if it did not exist
    with pytest.raises(ScopeError):
        engine.open_session("team", "elsewhere", token=narrow)


def test_a_viewer_sees_what_its_token_allows_and_nothing_else(engine):
    engine.store(engine.open_session("personal", "work"), "Diary", "A personal note about the garden.")
    engine.store(engine.open_session("team", "work"), "Standup", "The team meets at nine.")
    engine.store(engine.open_session("team", "home"), "Chores", "Team chores at home.")
    everything = engine.viewer(engine.create_token("all", "personal").token)
    team_work = engine.viewer(engine.create_token("tw", "team", ["work"]).token)
    assert everything.any_boundary
    assert {m.title for m in engine.list_memories(everything)} == {"Diary", "Standup", "Chores"}
    assert {m.title for m in engine.list_memories(team_work)} == {"Standup"}
    assert {m.title for m in engine.find(team_work, "garden team chores")} == {"Standup"}
    assert Scope.viewer("team", ("a", "b")).readable_boundaries == ("a", "b")


def test_the_graph_shows_edges_through_time_and_only_in_scope(engine, clock):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Anna", "My sister Anna lives in Lisbon.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Lisbon", "place")])
    before_move = clock()
    clock.advance(10 * DAY_MS)
    engine.store(sid, "Anna moved", "Anna moved to Porto.", anchor="Anna", anchor_type="person",
                 relations=[Relation("lives_in", "Porto", "place")])
    engine.store(engine.open_session("personal", "other"), "Elsewhere", "Nothing to see.", anchor="Hidden")
    scope = engine.scope(sid)
    names = {a.name: a for a in engine.anchors(scope)}
    assert set(names) == {"Anna", "Lisbon", "Porto"}
    anna = names["Anna"]
    assert anna.type == "person" and anna.memories == 2 and anna.edges == 2
    now_edges = {(e.relation, e.to_name, e.current) for e in engine.edges(scope, anna.id)}
    assert now_edges == {("lives_in", "Porto", True), ("lives_in", "Lisbon", False)}
    retired = next(e for e in engine.edges(scope, anna.id) if not e.current)
    assert retired.valid_to == clock()
    as_of = engine.edges(scope, anna.id, as_of=before_move)
    assert [(e.to_name, e.holds_at(before_move)) for e in as_of] == [("Lisbon", True)]
    nodes, edges, truncated = engine.neighbourhood(scope, anna.id, depth=2)
    assert {n.name for n in nodes} == {"Anna", "Lisbon", "Porto"} and len(edges) == 2 and not truncated
    _, _, cut = engine.neighbourhood(scope, anna.id, limit=2)
    assert cut
    assert [a.name for a in engine.anchors(scope, query="lis")] == ["Lisbon"]
    with pytest.raises(NotFound):
        engine.anchor(scope, engine.anchors(engine.scope(engine.open_session("personal", "other")))[0].id)
    team = engine.viewer(engine.create_token("team", "team").token)
    assert engine.anchors(team) == []


def test_listings_are_cut_to_the_token(engine):
    mine = engine.open_session("personal", "work", title="mine")
    ours = engine.open_session("team", "work", title="ours")
    engine.add_turn(ours, user="We ship on Friday.", assistant="Noted.")
    engine.store(ours, "Ship", "We ship on Friday.")
    deleted = engine.store(mine, "Wrong", "The sky is green.")
    engine.update(mine, deleted.id, delete=True)
    team = engine.create_token("t", "team", ["work"]).token
    assert {s["title"] for s in engine.sessions()} == {"mine", "ours"}
    listed = engine.sessions(token=team)
    assert [(s["title"], s["turns"], s["memories_formed"]) for s in listed] == [("ours", 1, 1)]
    assert [t["user_text"] for t in engine.turns(ours, token=team)] == ["We ship on Friday."]
    with pytest.raises(NotFound):
        engine.turns(mine, token=team)
    assert [t["memory_id"] for t in engine.tombstones()] == [deleted.id]
    assert engine.tombstones(token=team) == []


def test_a_backfill_job_reports_its_failure_in_words(engine):
    job = engine.backfill_embeddings()
    done = engine.jobs.wait(job.id, timeout=10)
    assert done.state == "failed" and "no embedding model" in done.error
    assert engine.job(job.id) == done
    with pytest.raises(NotFound):
        engine.job("job-missing")


def test_doctor_runs_every_check_including_the_write_paths(engine):
    names = [c.name for c in engine.doctor()]
    assert names == ["Database", "Data dir permissions", "Disk space", "Embeddings", "Model files",
                     "Relevance gate", "Checkpoint backlog", "Curation LLM"]


def test_a_receipt_of_a_session_beyond_the_token_is_not_found_and_its_session_is_not_named(engine):
    personal = engine.open_session("personal", "work")
    engine.store(personal, "Coffee", "The user drinks oat milk.")
    receipt = engine.recall(personal, "what milk do I drink?").receipt_id
    team = engine.create_token("t", "team").token
    with pytest.raises(NotFound) as refused:
        engine.explain(receipt, token=team)
    with pytest.raises(NotFound) as absent:
        engine.explain("rcp-" + "0" * 32, token=team)
    assert refused.value.message == absent.value.message.replace("rcp-" + "0" * 32, receipt)  # alike
    assert personal not in refused.value.message
    assert engine.explain(receipt)["session_id"] == personal
    # asked in a session of its own, a receipt of another session reads as one that is not there
    team_session = engine.open_session("team", "work")
    with pytest.raises(NotFound) as elsewhere:
        engine.explain(receipt, session_id=team_session, token=team)
    with pytest.raises(NotFound) as nowhere:
        engine.explain("rcp-" + "0" * 32, session_id=team_session, token=team)
    assert elsewhere.value.message == nowhere.value.message.replace("rcp-" + "0" * 32, receipt)


def test_a_session_counts_the_memories_its_turns_were_added_to_once_each(engine, clock):
    from support.provider import drain

    first = engine.open_session("personal", "work", title="first")
    engine.store_memory(first, "", "My brother Tom lives in Berlin.")
    drain(engine)
    later = engine.open_session("personal", "work", title="later")
    engine.store_memory(later, "", "Tom moved to Munich.")
    engine.store_memory(later, "", "Tom started a new job at Globex.")
    drain(engine)
    counts = {s["title"]: s["memories_formed"] for s in engine.sessions()}
    assert counts == {"first": 1, "later": 1}  # two appends to Tom's one living document: one memory


def test_a_session_counts_only_the_memories_that_still_stand(engine):
    sid = engine.open_session("personal", "work", title="s")
    doc = engine.store(sid, "Sky", "The sky is green.")
    rec = engine.store(sid, "Trip", "The user went to Lisbon in May.", memory_class="evidence")
    kept = engine.store(sid, "Tea", "The user drinks green tea.")
    assert rec.id.startswith("rec-") and doc.id.startswith("doc-") and kept.id.startswith("doc-")

    def counted():
        return {s["title"]: s["memories_formed"] for s in engine.sessions()}["s"]

    assert counted() == 3
    engine.update(sid, doc.id, delete=True)
    engine.update(sid, rec.id, delete=True)
    assert counted() == 1  # a deleted document and a record closed by its tombstone are not counted
    tombs = {t["memory_id"]: t["tombstone_id"] for t in engine.tombstones()}
    engine.restore(tombs[rec.id])
    engine.restore(tombs[doc.id])
    assert counted() == 3  # a restore supersedes the record's tombstone: its chain stands again
    engine.update(sid, doc.id, delete=True)
    [again] = [t for t in engine.deleted()[0] if t["memory_id"] == doc.id]  # not the tombstone restored above
    engine.erase(again["tombstone_id"])
    assert counted() == 2


def test_store_memory_says_when_a_memory_is_longer_than_recall_ever_injects(engine):
    sid = engine.open_session("personal", "work")
    short = engine.store_memory(sid, "Kayak", "The user keeps the kayak in the garage.")
    assert short.action == "queued" and "longer than recall injects" not in short.reason
    report = engine.store_memory(sid, "Report", "The build step compiles every module. " * 70)  # ~2,700
    assert report.action == "queued" and "longer than recall injects (2,000 characters" in report.reason
    assert "get_memories read it whole" in report.reason


def test_a_full_disk_is_said_in_words_and_in_status_until_a_write_succeeds(engine):
    from keepmind.engine.errors import StorageFailed

    sid = engine.open_session("personal", "work")
    engine.store(sid, "Tea", "The user drinks green tea.")
    pages = engine.db.write(lambda conn: conn.execute("PRAGMA page_count").fetchone()[0])
    engine.db.write(lambda conn: conn.execute(f"PRAGMA max_page_count={pages}").fetchall())  # SQLite: full
    with pytest.raises(StorageFailed) as full:
        for n in range(50):
            engine.store(sid, f"Fact {n}", f"Fact number {n} about the garden. " * 200)
    assert full.value.status == 507 and "the disk is full" in full.value.message
    assert "nothing of this request was kept" in full.value.message
    status = engine.status()
    assert status["status"] == "degraded" and any("writes to keepmind.db are failing" in r for r in status["reasons"])
    engine.db.write(lambda conn: conn.execute("PRAGMA max_page_count=1073741823").fetchall())  # space again
    engine.store(sid, "Coffee", "The user drinks no coffee.")
    assert engine.status()["status"] == "healthy"


@pytest.mark.parametrize("change", [dict(old_text="cashews", new_text="almonds"), dict(new_content="Nothing."),
                                    dict(title="Nuts"), dict(delete=True)])
def test_a_boundary_granted_for_reading_cannot_be_changed_from_the_other(make_engine, change):
    """A walk: with cross_boundary_reads {"work": ["home"]}, a work session rewrote and deleted home
    memories through update_memory. The grant widens reads only: writes never widen a scope."""
    engine = make_engine(policy__cross_boundary_reads={"work": ["home"]})
    home = engine.open_session("personal", "home")
    doc = engine.store(home, "Allergy", "I am allergic to peanuts and cashews.").id
    work = engine.open_session("personal", "work")
    assert [m.id for m in engine.get(work, [doc]).items] == [doc]  # it reads it
    with pytest.raises(ScopeError, match="boundary 'home', which a 'work' session may only read"):
        engine.update(work, doc, **change)
    assert engine.get(home, [doc]).items[0].body == "I am allergic to peanuts and cashews."
    assert engine.update(home, doc, old_text="cashews", new_text="almonds").action == "replaced"


def test_update_says_what_is_missing_as_missing_and_a_title_as_a_title(engine):
    """A walk: update_memory with new_text and no old_text was told "old_text is empty", and an empty
    title "give the memory some text"."""
    sid = engine.open_session("personal", "work")
    doc = engine.store(sid, "Home", "User lives in Lisbon.").id
    with pytest.raises(InvalidInput, match="^old_text is missing: give the exact text to replace"):
        engine.update(sid, doc, new_text="Porto")
    with pytest.raises(InvalidInput, match="^old_text is empty"):
        engine.update(sid, doc, old_text="", new_text="Porto")
    with pytest.raises(InvalidInput, match="^title is empty: give the memory a title$"):
        engine.update(sid, doc, title=" ")
