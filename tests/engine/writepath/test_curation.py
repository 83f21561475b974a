"""Curation decisions: rules, nominees, the curator LLM, the merge guard, living documents, the graph."""


import pytest

from keepmind.engine.clock import DAY_MS
from keepmind.engine.db import rows, scalar
from keepmind.engine.errors import InvalidInput
from keepmind.engine.writepath import checkpoints
from keepmind.engine.writepath.doctor import check_llm
from keepmind.engine.writepath.events import events_for
from keepmind.engine.writepath.llm import sha256_text
from keepmind.engine.writepath.proposals import Proposal
from support.provider import drain

CURATOR = "You curate a long-term memory"
TRACKER = "Price tracker: Sony WH-1000XM5"


def _events(engine, cp):
    with engine.db.snapshot() as conn:
        return events_for(conn, cp)


def _queue(engine, session, proposal: Proposal, trigger="observed-memory-proposals"):
    scope = engine.scope(session)
    return engine.write(checkpoints.enqueue, trigger=trigger,
                        payload={"proposal": proposal.to_payload(), "source": "observer"},
                        audience=scope.audience, boundary=scope.boundary, session_id=session,
                        now=engine.now()).checkpoint_id


def test_explicit_store_is_queued_then_created_without_any_llm_call(llm_engine, provider, personal):
    result = llm_engine.store_memory(personal, "Editor", "I write code in Helix with the gruvbox theme.")
    assert result.action == "queued" and result.id is None and result.checkpoint_id.startswith("cp-")
    [outcome] = drain(llm_engine)
    assert outcome.action == "create" and outcome.reason == "no_nominee"
    assert provider.requests == []  # no nominee: no LLM call
    [event] = _events(llm_engine, result.checkpoint_id)
    assert event["decided_by"] == "rule" and event["action"] == "create" and event["reason"] == "no_nominee"
    item = llm_engine.get(personal, outcome.memory_ids).items[0]
    assert item.body == "I write code in Helix with the gruvbox theme." and item.source == "tool"
    assert {"checkpoint": result.checkpoint_id} in item.provenance["external"]


def test_empty_ephemeral_and_duplicate_are_dropped_with_reasons(engine, personal):
    first = engine.store_memory(personal, "", "Backups run nightly at 02:00 UTC.")
    again = engine.store_memory(personal, "", "backups run nightly at 02:00 utc")
    thanks = _queue(engine, personal, Proposal("durable_fact", "t", "Thanks!", confidence=0.9))
    vague = _queue(engine, personal, Proposal("durable_fact", "maybe", "User might like tea.", confidence=0.3))
    outcomes = {o.checkpoint_id: o for o in drain(engine)}
    assert outcomes[first.checkpoint_id].action == "create"
    assert (outcomes[again.checkpoint_id].action, outcomes[again.checkpoint_id].reason) == ("skip", "duplicate")
    assert (outcomes[thanks].action, outcomes[thanks].reason) == ("drop", "ephemeral")
    assert (outcomes[vague].action, outcomes[vague].reason) == ("drop", "low_confidence")
    with engine.db.snapshot() as conn:
        assert scalar(conn, "SELECT COUNT(*) FROM memory_documents") == 1
        assert scalar(conn, "SELECT COUNT(*) FROM curation_events") == 4


def test_a_stray_character_is_never_kept(engine, personal):
    """A newcomer's store_memory("x") became a memory titled "x" that came up in searches."""
    for said in ("x", " ? ", "7"):
        with pytest.raises(InvalidInput, match="says nothing to remember"):
            engine.store_memory(personal, "", said)
    stray = _queue(engine, personal, Proposal("durable_fact", "x", "x", confidence=0.9))  # an import's unit
    kept = engine.store_memory(personal, "", "Go 1.22")
    outcomes = {o.checkpoint_id: o for o in drain(engine)}
    assert (outcomes[stray].action, outcomes[stray].reason) == ("drop", "ephemeral")
    assert outcomes[kept.checkpoint_id].action == "create"


def test_tombstoned_fact_proposed_again_is_skipped_with_reason_tombstone(engine, personal, clock):
    engine.store_memory(personal, "Coffee", "User drinks oat-milk flat whites.")
    [created] = drain(engine)
    engine.update(personal, created.memory_ids[0], delete=True, reason="wrong: user is lactose-free")
    clock.advance(DAY_MS)
    again = _queue(engine, personal, Proposal("durable_fact", "Coffee order", "User drinks oat-milk flat whites!",
                                              anchor="coffee", aliases=("coffee",), facets=("preference",),
                                              confidence=0.9))
    [outcome] = drain(engine)
    assert outcome.checkpoint_id == again and (outcome.action, outcome.reason) == ("skip", "tombstone")
    assert engine.find(personal, "flat whites") == []
    [event] = _events(engine, again)
    assert event["reason"] == "tombstone" and event["targets"] == [created.memory_ids[0]]  # names what was deleted


def test_price_tracker_without_llm_is_one_document_four_revisions_latest_first(engine, personal, clock):
    prices = ["$349", "$329", "$319", "$299"]
    for price in prices:
        engine.store_memory(personal, TRACKER, f"Sony WH-1000XM5 costs {price} at Best Buy this week.")
        drain(engine)
        clock.advance(7 * DAY_MS)
    docs = [m for m in engine.list_memories(personal) if m.kind == "document"]
    assert len(docs) == 1
    doc = docs[0]
    revisions = engine.revisions(personal, doc.id)
    assert len(revisions) == 4 and doc.revision == 4
    assert doc.body.startswith("Sony WH-1000XM5 costs $299") and doc.title == TRACKER  # a label of its own stays
    assert [doc.body.index(p) for p in reversed(prices)] == sorted(doc.body.index(p) for p in prices)
    assert "_[earlier, as of 2026-01-15]_" in doc.body
    assert [r["body"].split(" costs ")[1][:4] for r in revisions] == list(reversed(prices))


def test_price_tracker_with_curator_update_uses_previously_as_of(llm_engine, provider, personal, clock):
    llm_engine.store_memory(personal, TRACKER, "Sony WH-1000XM5 costs $349 at Best Buy (2026-01-01).")
    drain(llm_engine)
    doc_id = llm_engine.list_memories(personal)[0].id
    merged = [
        "Sony WH-1000XM5 costs $329 at Best Buy (2026-01-08) (previously $349, as of 2026-01-01).",
        "Sony WH-1000XM5 costs $319 at Best Buy (2026-01-15) (previously $329, as of 2026-01-08;"
        " $349, as of 2026-01-01).",
        "Sony WH-1000XM5 costs $299 at Best Buy (2026-01-22) (previously $319, as of 2026-01-15;"
        " $329, as of 2026-01-08; $349, as of 2026-01-01).",
    ]
    for day, (price, body) in zip(("08", "15", "22"), zip(("$329", "$319", "$299"), merged)):
        clock.advance(7 * DAY_MS)
        provider.script(CURATOR, f"<think>same product, new dated price</think>UPDATE {doc_id}\n---\n{body}")
        llm_engine.store_memory(personal, TRACKER, f"Sony WH-1000XM5 costs {price} at Best Buy (2026-01-{day}).")
        [outcome] = drain(llm_engine)
        assert (outcome.action, outcome.memory_ids) == ("update", (doc_id,))
    doc = llm_engine.get(personal, [doc_id]).items[0]
    assert doc.revision == 4 and doc.body == merged[-1] and doc.body.startswith("Sony WH-1000XM5 costs $299")
    calls = provider.calls(CURATOR)
    assert len(calls) == 3 and doc_id in calls[0]["messages"][1]["content"]
    with llm_engine.db.snapshot() as conn:
        last = rows(conn, "SELECT * FROM curation_events ORDER BY event_id DESC LIMIT 1")[0]
    assert last["decided_by"] == "model:scripted-1" and last["prompt_version"] == "curator-balanced-v1"
    raw = f"<think>same product, new dated price</think>UPDATE {doc_id}\n---\n{merged[-1]}"
    assert last["response_sha256"] == sha256_text(raw)


def test_careless_merge_falls_back_to_append_under_a_dated_separator(llm_engine, provider, personal, clock):
    llm_engine.store_memory(personal, "Home airport", "User's home airport is Boston Logan (BOS); "
                                                      "parking at Economy lot on 2026-01-01 cost $26.")
    drain(llm_engine)
    doc_id = llm_engine.list_memories(personal)[0].id
    clock.advance(DAY_MS)
    provider.script(CURATOR, f"UPDATE {doc_id}\n---\nUser flies from Providence now.")
    llm_engine.store_memory(personal, "Home airport", "User's home airport is now Providence (PVD) since 2026-01-02.")
    [outcome] = drain(llm_engine)
    assert outcome.action == "append" and outcome.reason.startswith("merge_guard_failed")
    body = llm_engine.get(personal, [doc_id]).items[0].body
    assert body.startswith("User's home airport is now Providence (PVD)")
    assert "Boston Logan (BOS)" in body and "$26" in body and "2026-01-01" in body
    assert "---\n_[earlier, as of 2026-01-01]_" in body
    [event] = _events(llm_engine, outcome.checkpoint_id)
    assert event["decided_by"] == "model:scripted-1" and "missing" in event["detail"]["guard"]


def test_curator_failure_retries_then_never_merges_destructively(llm_engine, provider, personal, clock):
    llm_engine.store_memory(personal, "Laptop", "User's laptop is a ThinkPad X1 Carbon Gen 11.")
    drain(llm_engine)
    provider.script(CURATOR, *[("status", 503, "overloaded")] * 5)
    llm_engine.store_memory(personal, "Laptop", "User's laptop has 32 GB of RAM.")
    statuses = []
    for _ in range(5):
        outcome = llm_engine.writepath.curation.run_once(clock())
        statuses.append(outcome.status)
        clock.advance(checkpoints.BACKOFF_CAP_MS)
    assert statuses == ["retry"] * 4 + ["completed"]
    assert outcome.action == "append" and outcome.reason == "llm_failed_same_anchor_append"
    body = llm_engine.list_memories(personal)[0].body
    assert "32 GB" in body and "ThinkPad X1 Carbon Gen 11" in body
    health = llm_engine.writepath.llm.health()
    assert health.failures == 5 and "HTTP 503" in health.last_error
    assert any("curation LLM failing" in r for r in llm_engine.status()["reasons"])
    assert check_llm(llm_engine).level == "warning"  # the doctor, whose alerts the tray shows, too


def test_the_doctor_says_the_provider_is_failing_when_no_table_holds_the_error(llm_engine):
    """A walk: the Overview said "curation LLM failing (1 in a row …)" while the doctor said "Curation
    LLM passes": it read only the observer's runs and the checkpoints' errors."""
    assert check_llm(llm_engine).level == "pass"
    llm_engine.writepath.llm.record_failure("curation", "parse", "no decision in the reply")
    check = check_llm(llm_engine)
    assert check.level == "warning" and "curation LLM failing (its last call failed" in check.message


def test_model_skip_and_unknown_update_target(llm_engine, provider, personal, clock):
    llm_engine.store_memory(personal, "Shell", "User's shell is fish with starship prompt.")
    drain(llm_engine)
    provider.script(CURATOR, "SKIP")
    llm_engine.store_memory(personal, "Shell", "User uses the fish shell.")
    [skip] = drain(llm_engine)
    assert (skip.action, skip.reason) == ("skip", "model_skip")
    provider.script(CURATOR, "UPDATE doc-00000000000000000000000000000000\n---\nwhatever")
    llm_engine.store_memory(personal, "Shell", "User's terminal is WezTerm.")
    [unknown] = drain(llm_engine)
    assert (unknown.action, unknown.reason) == ("append", "update_target_unknown")


def test_a_model_skip_that_would_drop_what_no_candidate_holds_is_appended(llm_engine, provider, personal, clock):
    llm_engine.store_memory(personal, "Deploys", "User deploys with Terraform 1.9; state in the bucket tf-state-prod.")
    drain(llm_engine)
    provider.script(CURATOR, "SKIP")
    llm_engine.store_memory(personal, "Deploys", "User deploys with Terraform 1.10 now, state in tf-state-prod-eu.")
    [outcome] = drain(llm_engine)
    assert (outcome.action, outcome.reason) == ("append", "model_skip_unsaid_same_anchor_append")
    [doc] = llm_engine.list_memories(personal)
    assert "1.10" in doc.body and "tf-state-prod-eu" in doc.body and "1.9" in doc.body


def test_anchors_dedupe_by_normalized_name_and_edges_keep_validity_intervals(engine, personal, clock):
    def member(airline, when):
        return Proposal("durable_fact", "Airline loyalty", f"User's preferred airline program is {airline}.",
                        anchor="User Travel Profile", anchor_type="profile", aliases=("airline",),
                        facets=("travel_profile",), confidence=0.95,
                        relations=(_rel("member_of", airline),))
    _queue(engine, personal, member("Delta SkyMiles", 0))
    drain(engine)
    clock.advance(DAY_MS)
    _queue(engine, personal, Proposal("durable_fact", "Airline loyalty", "User switched to United MileagePlus.",
                                      anchor="user-travel  profile!", anchor_type="profile", aliases=("airline",),
                                      facets=("travel_profile",), confidence=0.95,
                                      relations=(_rel("member_of", "United MileagePlus"),)))
    drain(engine)
    with engine.db.snapshot() as conn:
        anchors = rows(conn, "SELECT canonical_name FROM memory_anchors WHERE anchor_type='profile'")
        edges = rows(conn, "SELECT e.*, a.canonical_name AS target FROM memory_edges e JOIN memory_anchors a"
                           " ON a.anchor_id=e.to_anchor_id ORDER BY valid_from")
    assert len(anchors) == 1
    assert [(e["target"], e["valid_to"] is None) for e in edges] == [("Delta SkyMiles", False),
                                                                      ("United MileagePlus", True)]
    assert edges[0]["valid_to"] == edges[1]["valid_from"]
    assert all(e["asserted_by"].startswith("doc-") for e in edges)


def _rel(relation, target):
    from keepmind.engine.writepath.proposals import RelationSpec

    return RelationSpec(relation, target, "organization")


def test_evidence_is_a_record_that_expires_in_30_days(engine, personal, clock):
    _queue(engine, personal, Proposal("evidence", "Amsterdam trip", "User flies BOS to AMS on 2026-02-12.",
                                      anchor="amsterdam-trip", aliases=("AMS",), facets=("travel",),
                                      confidence=0.85))
    [outcome] = drain(engine)
    assert outcome.memory_ids[0].startswith("rec-")
    item = engine.get(personal, outcome.memory_ids).items[0]
    assert item.memory_class == "evidence" and item.recall_mode == "searchable"
    assert item.expires_at == clock() + 30 * DAY_MS


def test_compaction_and_findings_are_evidence(engine, personal):
    compacted = engine.compact(personal, "We set up the CI pipeline and fixed flaky test_sync.")
    findings = engine.add_findings(personal, ["The API rate limit is 600 requests per minute.",
                                              {"title": "Retry header", "content": "429 replies carry Retry-After."}])
    assert compacted.action == "queued" and [f.action for f in findings] == ["queued", "queued"]
    outcomes = drain(engine)
    assert [o.action for o in outcomes] == ["create"] * 3
    items = engine.get(personal, [o.memory_ids[0] for o in outcomes]).items
    modes = {i.source: i.recall_mode for i in items}
    assert modes == {"compaction": "manual", "subagent": "searchable"}
    with engine.db.snapshot() as conn:
        priorities = [r["priority"] for r in rows(conn, "SELECT priority FROM memory_checkpoints ORDER BY priority DESC")]
    assert priorities == [90, 70, 70]


def test_public_sessions_cannot_queue(engine):
    import pytest

    from keepmind.engine.errors import InvalidInput, ScopeError

    public = engine.open_session("public", "web")
    with pytest.raises(ScopeError):
        engine.store_memory(public, "x", "The office wifi is slow.")
    private = engine.open_session("personal", "work")
    with pytest.raises(InvalidInput):
        engine.store_memory(private, "x", "   ")
    with pytest.raises(InvalidInput):
        engine.add_findings(private, [{"title": "no content"}])
    assert engine.checkpoint_overview()["counts"]["pending"] == 0


def test_consolidate_folds_near_duplicates_into_one_document(llm_engine, provider, personal, clock):
    a = llm_engine.store(personal, "Standup time", "The team standup is at 09:30 in room Orca.",
                         anchor="Standup time").id
    b = llm_engine.store(personal, "Daily standup", "The daily team standup is at 09:30 on Zoom.").id
    merged = ("The daily team standup is at 09:45 on Zoom since 2026-01-05 (previously 09:30,"
              " in room Orca or on Zoom).")
    provider.script(CURATOR, f"CONSOLIDATE {a} {b}\n---\n{merged}")
    clock.advance(DAY_MS)
    llm_engine.store_memory(personal, "Standup time", "The daily team standup is at 09:45 on Zoom since 2026-01-05.")
    [outcome] = drain(llm_engine)
    assert outcome.action == "consolidate" and outcome.memory_ids == (a, b)
    prompt = provider.calls(CURATOR)[0]["messages"][1]["content"]
    assert a in prompt and b in prompt  # the anchor's document and the lexical nominee
    assert llm_engine.get(personal, [a]).items[0].body == merged
    assert llm_engine.get(personal, [b]).items == []  # folded in, not deleted as wrong
    with llm_engine.db.snapshot() as conn:
        assert rows(conn, "SELECT deactivated_reason FROM memory_documents WHERE document_id=?",
                    (b,))[0]["deactivated_reason"] == f"consolidated into {a}"
        assert scalar(conn, "SELECT COUNT(*) FROM tombstones") == 0


def test_an_update_naming_two_memories_updates_the_first_and_deletes_neither(llm_engine, provider, personal, clock):
    a = llm_engine.store(personal, "Standup time", "The team standup is at 09:30 in room Orca.",
                         anchor="Standup time").id
    b = llm_engine.store(personal, "Daily standup", "The daily team standup is at 09:30 on Zoom.").id
    merged = ("The daily team standup is at 09:45 on Zoom since 2026-01-05 (previously 09:30,"
              " in room Orca or on Zoom).")
    provider.script(CURATOR, f"UPDATE {a} {b}\n---\n{merged}")
    clock.advance(DAY_MS)
    llm_engine.store_memory(personal, "Standup time", "The daily team standup is at 09:45 on Zoom since 2026-01-05.")
    [outcome] = drain(llm_engine)
    assert b in provider.calls(CURATOR)[0]["messages"][1]["content"]  # both were candidates
    assert outcome.action == "update" and outcome.memory_ids == (a,)
    assert llm_engine.get(personal, [b]).items[0].body == "The daily team standup is at 09:30 on Zoom."


def test_unparseable_curator_reply_is_a_failure_retried_then_conservative(llm_engine, provider, personal, clock):
    llm_engine.store_memory(personal, "Standup time", "The team standup is at 09:30.")
    drain(llm_engine)
    provider.script(CURATOR, *["I think these might be related, hard to say."] * 5)
    llm_engine.store_memory(personal, "Standup time", "Standup notes go in the #standup channel.")
    statuses = []
    for _ in range(5):
        outcome = llm_engine.writepath.curation.run_once(clock())
        statuses.append(outcome.status)
        if outcome.status == "retry":  # while the model answers garbage, status says so
            assert any("curation LLM failing" in r for r in llm_engine.status()["reasons"])
        clock.advance(checkpoints.BACKOFF_CAP_MS)
    assert statuses == ["retry"] * 4 + ["completed"]
    assert (outcome.action, outcome.reason) == ("append", "llm_no_decision_same_anchor_append")
    body = llm_engine.list_memories(personal)[0].body
    assert "09:30" in body and "#standup" in body


def test_a_fact_another_memory_already_says_is_skipped_as_contained(engine, personal, team):
    engine.store_memory(personal, "Drinks", "The user likes tea and coffee, never soda.")
    engine.store_memory(personal, "饮食", "咖啡只喝美式，不加糖，也不要奶。")
    drain(engine)
    said = _queue(engine, personal, Proposal("durable_fact", "Tea", "The user likes tea", confidence=0.9))
    zh = _queue(engine, personal, Proposal("durable_fact", "咖啡", "咖啡只喝美式，不加糖", confidence=0.9))
    partial = _queue(engine, personal, Proposal("durable_fact", "Tea", "The user likes tea", confidence=0.9))
    teapots = _queue(engine, personal, Proposal("durable_fact", "Pots", "The user likes teapots", confidence=0.9))
    other_scope = _queue(engine, team, Proposal("durable_fact", "Tea", "The user likes tea", confidence=0.9))
    outcomes = {o.checkpoint_id: o for o in drain(engine)}
    assert (outcomes[said].action, outcomes[said].reason) == ("skip", "contained")
    assert (outcomes[zh].action, outcomes[zh].reason) == ("skip", "contained")
    assert (outcomes[partial].action, outcomes[partial].reason) == ("skip", "contained")
    assert outcomes[teapots].action == "create"  # whole words: "tea" is not "teapots"
    assert outcomes[other_scope].action == "create"  # another audience's memory says nothing here
    [event] = _events(engine, said)
    assert event["decided_by"] == "rule" and len(event["targets"]) == 1


def test_a_curator_that_refuses_the_requests_dead_letters_then_a_retry_succeeds(llm_engine, provider, personal,
                                                                                clock):
    llm_engine.store_memory(personal, "Laptop", "User's laptop is a ThinkPad X1 Carbon Gen 11.")
    drain(llm_engine)
    provider.script(CURATOR, ("status", 404, "model 'scripted-1' not found"))
    queued = llm_engine.store_memory(personal, "Laptop", "User's laptop has 32 GB of RAM.")
    # asked again it would answer the same: dead at the first refusal, not after five
    assert llm_engine.writepath.curation.run_once(clock()).status == "dead"
    assert len(provider.calls(CURATOR)) == 1
    dead = llm_engine.checkpoint(queued.checkpoint_id)
    assert dead["status"] == "dead" and "HTTP 404" in dead["last_error"] and "then retry" in dead["last_error"]
    provider.script(CURATOR, "CREATE")
    llm_engine.retry_checkpoint(queued.checkpoint_id)
    [outcome] = drain(llm_engine)
    assert outcome.status == "completed" and llm_engine.checkpoint(queued.checkpoint_id)["status"] == "completed"


def test_a_weaker_restatement_is_contained_by_the_stronger_memory_not_appended_over_it(engine, personal):
    engine.store_memory(personal, "", "I strongly prefer window seats when I fly, and I avoid red-eye flights.")
    drain(engine)
    engine.store_memory(personal, "", "I prefer window seats when I fly.")
    [outcome] = drain(engine)
    assert (outcome.action, outcome.reason) == ("skip", "contained")
    [memory] = engine.list_memories(personal)
    assert memory.body == "I strongly prefer window seats when I fly, and I avoid red-eye flights."
    engine.store_memory(personal, "", "I really strongly prefer window seats when I fly.")  # says more: kept
    [stronger] = drain(engine)
    assert stronger.action in ("create", "append")


def test_chatter_and_a_long_run_of_one_letter_are_not_kept(engine, personal):
    """A walk's store_memory kept "ok thanks", "lol" and 99,990 x's as durable facts ("hi" was dropped)."""
    chatter = [engine.store_memory(personal, "", said).checkpoint_id
               for said in ("ok thanks", "lol", "x" * 99_990, "OK, got it, thanks!", "haha")]
    kept = [engine.store_memory(personal, "", said).checkpoint_id
            for said in ("I am 42.", "AAA batteries for the remote.", "Go to the gym on Mondays.")]
    outcomes = {o.checkpoint_id: o for o in drain(engine)}
    assert [(outcomes[c].action, outcomes[c].reason) for c in chatter] == [("drop", "ephemeral")] * 5
    assert [outcomes[c].action for c in kept] == ["create"] * 3


def test_a_living_document_near_half_the_injection_budget_takes_no_more_appends_a_new_one_begins(
        engine, personal):
    """Without an LLM, a walk's fifteen facts about the user's wife went into the document saying
    where the user lives: past 2,000 characters, none of it was injected any more."""
    from keepmind.engine.writepath.curation import FULL_DOCUMENT_CHARS

    facts = [f"User's wife Marta {what}." for what in (
        "works as an architect in the old town", "has her birthday on the twelfth of May every year",
        "loves the bakery on the corner and its custard tarts", "plays the piano on Sunday evenings",
        "is allergic to cats and to birch pollen", "runs ten kilometres along the river every Saturday",
        "reads Portuguese crime novels before she sleeps", "grew up in a village near Coimbra",
        "drinks her coffee black with no sugar at all", "collects old maps of the Atlantic coast",
        "speaks four languages including Dutch and Italian", "volunteers at the animal shelter on Thursdays",
        "wants to visit Japan in the cherry blossom season", "keeps a herb garden on the balcony")]
    ids = [_queue(engine, personal, Proposal("durable_fact", "Marta", fact, anchor="Marta", anchor_type="person",
                                             confidence=0.9)) for fact in facts]
    outcomes = {o.checkpoint_id: o for o in drain(engine)}
    assert [outcomes[i].action for i in ids][:2] == ["create", "append"]
    assert any(outcomes[i].reason.endswith("_document_full") for i in ids)
    docs = engine.list_memories(personal)
    assert len(docs) >= 2 and all(len(d.body) <= FULL_DOCUMENT_CHARS for d in docs)
    said = "\n".join(d.body for d in docs)
    assert all(fact in said for fact in facts)  # nothing lost: every fact is in one of them
    with engine.db.snapshot() as conn:
        assert scalar(conn, "SELECT COUNT(DISTINCT anchor_id) FROM memory_documents") == 1  # one anchor, Marta


def test_the_doctor_says_what_it_counts_when_only_curation_failed(llm_engine, personal, clock):
    """A walk: "0 of 0 observer calls and 2 curation proposals failed in the last 24 h" beside the
    Overview's "6 in a row": neither said what it counted."""
    from keepmind.engine.writepath import checkpoints

    for title in ("Laptop", "Train"):
        queued = llm_engine.store_memory(personal, title, f"The user's {title.lower()} is new.")
        llm_engine.write(checkpoints.lease_next, "test-owner", clock(), 60_000)
        llm_engine.write(checkpoints.fail, queued.checkpoint_id, "test-owner",
                         "curator LLM timeout: no reply within 60 s", clock(), max_attempts=5)
    check = check_llm(llm_engine)
    assert check.level == "warning" and "in the last 24 h 2 curation proposals failed;" in check.message
    assert "observer" not in check.message and "a proposal can take several calls" in check.message
