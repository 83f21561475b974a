"""The observer: triggers, one run at a time, stale runs, recalled memories, pass-back, the gate."""

import json
import threading

import pytest

from keepmind.engine import open_engine
from keepmind.engine.clock import DAY_MS
from keepmind.engine.db import rows
from keepmind.engine.settings import defaults
from support.provider import drain, llm_settings

OBSERVER = "You distil a conversation"


def _proposal(title, content, cls="durable_fact", op="upsert_document", confidence=0.9, **extra):
    p = {"operation": op, "memoryClass": cls, "subjectKind": "user", "subjectValue": "user",
         "anchor": {"canonicalName": title.lower().replace(" ", "-"), "anchorType": "preference"},
         "title": title, "content": content, "aliases": [title.split()[0]], "facets": ["preference"],
         "confidence": confidence}
    p.update(extra)
    return p


def _reply(*proposals):
    return json.dumps({"proposals": list(proposals)})


def _due(engine, now):
    return dict(engine.writepath.observer.due_sessions(now))


def test_idle_trigger_fires_at_90_seconds(engine, personal, clock):
    engine.add_turn(personal, user="I prefer window seats.", assistant="Noted.")
    clock.advance(89_999)
    assert personal not in _due(engine, clock())
    clock.advance(1)
    assert _due(engine, clock())[personal] == "idle"


def test_idle_setting_has_a_floor_of_10_seconds(home, clock):
    settings = defaults().with_overrides(session__observer_idle_seconds=10)
    with open_engine(home, settings=settings, clock=clock, start_workers=False) as eng:
        session = eng.open_session("personal", "work")
        eng.add_turn(session, user="I prefer window seats.")
        clock.advance(9_999)
        assert session not in _due(eng, clock())
        clock.advance(1)
        assert _due(eng, clock())[session] == "idle"


def test_every_fifth_turn_triggers_and_zero_disables(home, clock):
    for every, expected in ((5, "turns"), (0, None)):
        settings = defaults().with_overrides(session__distill_every_turns=every)
        with open_engine(home / str(every), settings=settings, clock=clock, start_workers=False) as eng:
            session = eng.open_session("personal", "work")
            for i in range(4):
                eng.add_turn(session, user=f"message {i}")
            assert session not in _due(eng, clock())
            eng.add_turn(session, user="message 5")
            assert _due(eng, clock()).get(session) == expected


def test_end_and_passivation_trigger_a_final_run(engine, clock):
    ended = engine.open_session("personal", "work")
    engine.add_turn(ended, user="I'm a member of the Boston Public Library.")
    engine.end_session(ended)
    assert _due(engine, clock())[ended] == "end"
    idle = engine.open_session("personal", "work")
    engine.add_turn(idle, user="I live in Somerville.")
    clock.advance(30 * 60_000)
    assert _due(engine, clock())[idle] == "passivation"
    results = {r.session_id: r for r in engine.writepath.scheduler.run_once(clock())}
    assert results[ended].status == results[idle].status == "completed"
    with engine.db.snapshot() as conn:
        status = {r["session_id"]: r["status"] for r in rows(conn, "SELECT session_id, status FROM sessions")}
    assert status[idle] == "passivated" and status[ended] == "ended"
    assert _due(engine, clock()) == {}  # nothing new: no more runs


def test_without_llm_the_rule_extractor_distils_user_statements(engine, personal, clock):
    engine.add_turn(personal, user="Hi! I'm a Delta SkyMiles Gold member. Can you check flights?",
                    assistant="Sure, here are three options.")
    engine.add_turn(personal, user="I usually fly out of Boston Logan. Thanks!", assistant="Got it.")
    clock.advance(90_000)
    [run] = engine.writepath.scheduler.run_once(clock())
    assert run.decided_by == "rule" and len(run.checkpoint_ids) == 2
    drain(engine)
    bodies = sorted(m.body for m in engine.list_memories(personal))
    assert bodies == ["User is a Delta SkyMiles Gold member.", "User usually flies out of Boston Logan."]


def test_public_sessions_are_never_observed(engine, clock):
    public = engine.open_session("public", "web")
    engine.add_turn(public, user="I live in Somerville.")
    clock.advance(DAY_MS)
    assert engine.writepath.scheduler.run_once(clock()) == []


def test_turns_survive_a_restart_before_distillation(home, clock):
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as eng:
        session = eng.open_session("personal", "work")
        eng.add_turn(session, user="I prefer aisle seats on long flights.")
    clock.advance(90_000)
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as eng:
        [run] = eng.writepath.scheduler.run_once(clock())
        assert run.session_id == session and len(run.checkpoint_ids) == 1


def test_llm_run_at_most_three_proposals_and_the_gate(llm_engine, provider, personal, clock):
    provider.script(OBSERVER, _reply(
        _proposal("Seat preference", "User prefers aisle seats.", confidence=0.95),
        _proposal("Meal preference", "User orders vegetarian meals.", confidence=0.9),
        _proposal("Lounge access", "User has Delta Sky Club access.", confidence=0.85),
        _proposal("Bag habit", "User travels with carry-on only.", confidence=0.8),
        _proposal("No metadata", "User likes trains.", aliases=[], confidence=0.6),  # usable: see below
        _proposal("Bad class", "x", cls="opinion"),
        _proposal("Ignored", "y", op="ignore"),
    ))
    llm_engine.add_turn(personal, user="Aisle seat, vegetarian meal, carry-on only please.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert [p.title for p in run.proposals] == ["Seat preference", "Meal preference", "Lounge access"]
    assert run.rejections == {"invalid-memory-class": 1, "invalid-operation": 1, "max-proposals-exceeded": 2}
    assert len(run.checkpoint_ids) == 3
    with llm_engine.db.snapshot() as conn:
        [row] = rows(conn, "SELECT * FROM observer_runs")
        priorities = {r["priority"] for r in rows(conn, "SELECT priority FROM memory_checkpoints")}
    assert row["decided_by"] == "model:scripted-1" and row["prompt_version"] == "observer-v3"
    assert priorities == {60}


def test_a_model_that_leaves_out_aliases_and_facets_still_has_its_fact_kept(llm_engine, provider, personal, clock):
    """A walk's model sent no aliases or facets: every proposal was refused as missing retrieval
    metadata, and "I drink espresso without sugar.", which no rule reads, was lost. The anchor names them."""
    provider.script(OBSERVER, _reply(_proposal("Coffee", "User drinks espresso without sugar.", aliases=[],
                                               facets=[])))
    llm_engine.add_turn(personal, user="I drink espresso without sugar.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert run.decided_by == "model:scripted-1" and len(run.checkpoint_ids) == 1 and run.rejections == {}
    [kept] = run.proposals
    assert (kept.aliases, kept.facets) == (("coffee",), ("preference",))


def test_a_model_whose_every_proposal_is_unusable_hands_the_turns_to_the_rules(llm_engine, provider, personal,
                                                                                clock):
    """A small local model answering nothing usable: nothing learnt would be silent loss."""
    provider.script(OBSERVER, _reply(_proposal("Seat", "User prefers aisle seats on long-haul flights.",
                                               cls="opinion")))
    llm_engine.add_turn(personal, user="I prefer aisle seats on long-haul flights.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert run.status == "completed" and run.decided_by == "rule" and len(run.checkpoint_ids) == 1
    assert run.rejections == {"model:invalid-memory-class": 1}
    provider.script(OBSERVER, _reply())  # the model finds nothing worth keeping: that is its call
    llm_engine.add_turn(personal, user="Thanks, that's all.")
    clock.advance(90_000)
    [quiet] = llm_engine.writepath.scheduler.run_once(clock())
    assert quiet.decided_by == "model:scripted-1" and quiet.checkpoint_ids == ()


def test_class_forces_the_storage_pattern(llm_engine, provider, personal, clock):
    provider.script(OBSERVER, _reply(
        _proposal("Home city", "User lives in Somerville, MA.", op="append_record"),
        _proposal("Dentist visit", "User has a dentist appointment on 2026-01-09.", cls="evidence"),
    ))
    llm_engine.add_turn(personal, user="I live in Somerville; dentist on Friday.")
    clock.advance(90_000)
    llm_engine.writepath.scheduler.run_once(clock())
    drain(llm_engine)
    kinds = {m.title: (m.kind, m.recall_mode) for m in llm_engine.list_memories(personal)}
    assert kinds == {"Home city": ("document", "auto"), "Dentist visit": ("record", "searchable")}


def test_recalled_memories_are_marked_and_not_restated(llm_engine, provider, personal, clock):
    known = llm_engine.store(personal, "Editor", "User writes code in Helix.").id
    provider.script(OBSERVER, _reply(_proposal("Editor", "User writes code in Helix."),
                                     _proposal("Font", "User likes the Iosevka font.")))
    llm_engine.add_turn(personal, user="Set up Helix with Iosevka for me.", recalled_ids=[known])
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    transcript = json.loads(provider.calls(OBSERVER)[0]["messages"][1]["content"])["transcript"]
    assert "[recalled-memory] Editor: User writes code in Helix." in transcript
    assert "[user] Set up Helix with Iosevka for me." in transcript
    assert [p.title for p in run.proposals] == ["Font"]


def test_a_correction_or_an_extension_of_a_recalled_memory_is_proposed(llm_engine, provider, personal, clock):
    known = llm_engine.store(personal, "Editor", "User uses Neovim for Python, Go, Rust, Lua and Zig.").id
    provider.script(OBSERVER, _reply(_proposal("Editor", "User no longer uses Neovim for Python, Go, Rust and Lua."),
                                     _proposal("Languages", "User uses Neovim for Python, Go, Rust, Lua, Zig and OCaml."),
                                     _proposal("Editor again", "User uses Neovim for Python, Go, Rust, Lua and Zig.")))
    llm_engine.add_turn(personal, user="I no longer use Neovim; and I added OCaml.", recalled_ids=[known])
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert [p.title for p in run.proposals] == ["Editor", "Languages"]  # only the restatement is dropped


def test_accepted_proposals_are_passed_back_to_the_next_run(llm_engine, provider, personal, clock):
    provider.script(OBSERVER, _reply(_proposal("Seat preference", "User prefers aisle seats.")),
                    _reply(_proposal("Seat preference", "User prefers aisle seats.")))
    llm_engine.add_turn(personal, user="Aisle seats always.")
    clock.advance(90_000)
    first = llm_engine.writepath.scheduler.run_once(clock())
    llm_engine.add_turn(personal, user="Like I said, aisle.")
    clock.advance(90_000)
    second = llm_engine.writepath.scheduler.run_once(clock())
    payload = json.loads(provider.calls(OBSERVER)[1]["messages"][1]["content"])
    assert payload["existingProposals"] == [{"anchor": "seat-preference", "title": "Seat preference",
                                             "content": "User prefers aisle seats."}]
    assert "Aisle seats always." not in payload["transcript"]  # only new turns are distilled
    assert len(first[0].checkpoint_ids) == 1 and second[0].checkpoint_ids == ()


def test_a_run_made_stale_by_a_newer_turn_is_discarded(llm_engine, provider, personal, clock):
    def reply_while_user_keeps_typing(body):
        llm_engine.add_turn(personal, user="Actually, make that a window seat.")
        return _reply(_proposal("Seat preference", "User prefers aisle seats."))

    provider.script(OBSERVER, reply_while_user_keeps_typing,
                    _reply(_proposal("Seat preference", "User prefers window seats.")))
    llm_engine.add_turn(personal, user="I prefer aisle seats.")
    clock.advance(90_000)
    [stale] = llm_engine.writepath.scheduler.run_once(clock())
    assert stale.status == "stale" and stale.checkpoint_ids == ()
    clock.advance(90_000)
    [fresh] = llm_engine.writepath.scheduler.run_once(clock())
    assert fresh.status == "completed" and [p.content for p in fresh.proposals] == ["User prefers window seats."]
    transcript = json.loads(provider.calls(OBSERVER)[1]["messages"][1]["content"])["transcript"]
    assert "I prefer aisle seats." in transcript and "window seat" in transcript


def test_one_run_at_a_time_per_session(llm_engine, provider, personal, clock):
    provider.script(OBSERVER, "hang")
    llm_engine.add_turn(personal, user="I prefer aisle seats.")
    clock.advance(90_000)
    observer = llm_engine.writepath.observer
    first = threading.Thread(target=observer.distill, args=(personal, clock(), "idle"))
    first.start()
    assert provider.received.wait(10)
    assert observer.distill(personal, clock(), "idle") is None  # in flight: skipped
    provider.release.set()
    first.join(10)
    assert len(provider.calls(OBSERVER)) == 1


def test_llm_failures_are_recorded_backed_off_then_rules_take_over(llm_engine, provider, personal, clock):
    provider.script(OBSERVER, ("status", 500, "model crashed"), "not json at all",
                    ("raw", {"choices": []}))
    llm_engine.add_turn(personal, user="I'm a member of the Sierra Club.")
    clock.advance(90_000)
    runs = []
    for _ in range(2):
        [run] = llm_engine.writepath.scheduler.run_once(clock())
        runs.append(run)
        assert llm_engine.writepath.scheduler.run_once(clock()) == []  # backing off
        clock.advance(10 * 60_000)
    assert [r.status for r in runs] == ["failed"] * 2
    assert "HTTP 500" in runs[0].error and "parse" in runs[1].error
    # the third failure is the last try: the rules distil the same turns in the same run
    [rules] = llm_engine.writepath.scheduler.run_once(clock())
    assert rules.status == "completed" and rules.decided_by == "rule" and len(rules.checkpoint_ids) == 1
    with llm_engine.db.snapshot() as conn:
        errors = [r["error"] for r in rows(conn, "SELECT error FROM observer_runs WHERE status='failed'"
                                                  " ORDER BY rowid")]
    assert len(errors) == 3 and all(errors) and "protocol" in errors[2]
    assert len(provider.calls(OBSERVER)) == 3


def test_a_provider_that_refuses_the_request_itself_hands_the_turns_to_the_rules_at_once(
        llm_engine, provider, personal, clock):
    """An unknown model or a bad key answers 4xx every time: waiting to ask again only delays it,
    and a conversation must never be left undistilled."""
    provider.script(OBSERVER, ("status", 400, '{"error": "model nope not found"}'))
    llm_engine.add_turn(personal, user="I play the cello on Tuesdays.")
    llm_engine.end_session(personal)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert run.status == "completed" and run.decided_by == "rule" and len(run.checkpoint_ids) == 1
    assert len(provider.calls(OBSERVER)) == 1
    with llm_engine.db.snapshot() as conn:
        statuses = [r["status"] for r in rows(conn, "SELECT status FROM observer_runs ORDER BY rowid")]
    assert statuses == ["failed", "completed"]  # the failure stays on record for the doctor
    assert any("the last was the observer's" in r for r in llm_engine.status()["reasons"])


def test_turns_an_llm_failed_on_are_distilled_at_once_when_no_llm_is_configured_any_more(
        llm_engine, provider, home, personal, clock):
    provider.script(OBSERVER, ("status", 503, "overloaded"))
    llm_engine.add_turn(personal, user="I'm a member of the Sierra Club.")
    clock.advance(90_000)
    [failed] = llm_engine.writepath.scheduler.run_once(clock())
    assert failed.status == "failed"
    llm_engine.close()
    with open_engine(home, clock=clock, start_workers=False) as plain:  # the LLM settings removed
        [run] = plain.writepath.scheduler.run_once(clock())  # no back-off wait: the rules do not fail
        assert run.status == "completed" and run.decided_by == "rule"


@pytest.mark.parametrize("reply", [
    "```json\n" + _reply(_proposal("Seat preference", "User prefers aisle seats.")) + "\n```",
    "<think>the user said aisle twice</think>\n" + _reply(_proposal("Seat preference", "User prefers aisle seats.")),
    "Here you go: " + _reply(_proposal("Seat preference", "User prefers aisle seats.")) + " Hope that helps!",
])
def test_observer_reply_tolerates_fences_think_blocks_and_chatter(llm_engine, provider, personal, clock, reply):
    provider.script(OBSERVER, reply)
    llm_engine.add_turn(personal, user="Aisle please.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert run.status == "completed" and len(run.checkpoint_ids) == 1


def test_llm_settings_key_is_sent_as_bearer(home, clock, provider):
    with open_engine(home, settings=llm_settings(provider), clock=clock, start_workers=False,
                     llm_api_key="k-123") as eng:
        provider.script(OBSERVER, _reply())
        session = eng.open_session("personal", "work")
        eng.add_turn(session, user="hello there friend")
        clock.advance(90_000)
        eng.writepath.scheduler.run_once(clock())
    [call] = provider.requests
    assert call["_auth"] == "Bearer k-123" and call["_path"] == "/v1/chat/completions"
    assert call["model"] == "scripted-1" and call["max_tokens"] == 4096 and call["temperature"] == 0


def test_a_failure_preview_never_keeps_a_secret(llm_engine, provider, personal, clock):
    leaked = "ghp_" + "Zx9" * 12
    provider.script(OBSERVER, f"Sorry, I cannot parse this. The token was {leaked}")
    llm_engine.add_turn(personal, user="Please remember my preferences.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert run.status == "failed"
    with llm_engine.db.snapshot() as conn:
        [row] = rows(conn, "SELECT error FROM observer_runs")
    assert "parse" in row["error"] and leaked not in row["error"] and "[secret removed]" in row["error"]


def test_a_long_transcript_is_distilled_in_windows_oldest_first_and_no_turn_goes_unread(
        llm_engine, provider, personal, clock):
    """A fact said before long replies is read: a run takes the oldest turns that fit, the next the rest."""
    known = llm_engine.store(personal, "Editor", "User writes code in Helix.").id
    provider.script(OBSERVER, _reply(), _reply(), _reply())
    llm_engine.add_turn(personal, user="My home airport is OAK and I fly JetBlue.", recalled_ids=[known])
    for n in range(2, 5):
        llm_engine.add_turn(personal, user=f"Fix bug {n}.", assistant="def f():\n    pass\n" * 700)  # ~11k each
    llm_engine.add_turn(personal, user="I prefer aisle seats.")
    clock.advance(90_000)
    runs = []
    for _ in range(4):
        runs += llm_engine.writepath.scheduler.run_once(clock())
    sent = [json.loads(c["messages"][1]["content"])["transcript"] for c in provider.calls(OBSERVER)]
    assert len(sent) >= 2 and all(len(t) < 25_000 for t in sent)
    assert "home airport is OAK" in sent[0] and sent[0].startswith("[recalled-memory] Editor:")
    assert "[user] I prefer aisle seats." in sent[-1]
    every = "\n".join(sent)
    assert all(f"[turn {n}]" in every for n in range(1, 6))  # each turn read by some run
    assert [r.status for r in runs] == ["completed"] * len(sent)
    with llm_engine.db.snapshot() as conn:
        spans = [(r["from_turn"], r["through_turn"]) for r in rows(
            conn, "SELECT from_turn, through_turn FROM observer_runs ORDER BY rowid")]
    assert spans[0][0] == 0 and spans[-1][1] == 5
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # consecutive windows, no gap


def test_one_turn_longer_than_a_window_is_sent_cut_with_the_users_words_first(llm_engine, provider, personal,
                                                                                 clock):
    provider.script(OBSERVER, _reply())
    llm_engine.add_turn(personal, user="I prefer aisle seats.", assistant="z" * 60_000)
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    [call] = provider.calls(OBSERVER)
    transcript = json.loads(call["messages"][1]["content"])["transcript"]
    assert run.status == "completed" and "[user] I prefer aisle seats." in transcript and len(transcript) <= 24_000



def test_five_facts_said_in_five_turns_are_five_proposals_not_three(llm_engine, provider, personal, clock):
    facts = ["User's home airport is SFO.", "User is vegetarian.", "User prefers aisle seats.",
             "User works at Acme.", "User's cat is called Miso."]
    provider.script(OBSERVER, _reply(*[_proposal(f"Fact {n}", f) for n, f in enumerate(facts)]))
    for fact in facts:
        llm_engine.add_turn(personal, user=fact)
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert len(run.proposals) == 5 and not run.rejections


def test_a_proposal_without_an_anchor_is_not_hung_on_the_subject_user(llm_engine, provider, personal, clock):
    """Five facts about "user" with no anchor were one living document, four of them under "earlier"."""
    bare = [{k: v for k, v in _proposal(t, c).items() if k != "anchor"}
            for t, c in [("Home airport", "User's home airport is SFO."), ("Diet", "User is vegetarian."),
                         ("Dog", "User's dog is named Pixel.")]]
    provider.script(OBSERVER, _reply(*bare))
    llm_engine.add_turn(personal, user="SFO, vegetarian, and my dog Pixel.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert [p.anchor for p in run.proposals] == ["Home airport", "Diet", "Dog"]


def test_a_models_nul_is_removed_and_an_overlong_body_is_rejected_in_the_gate(llm_engine, provider, personal,
                                                                               clock):
    provider.script(OBSERVER, _reply(_proposal("Seat", "User prefers\u0000 aisle seats."),
                                     _proposal("Log", "x " * 60_000)))
    llm_engine.add_turn(personal, user="Aisle, please.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert [p.content for p in run.proposals] == ["User prefers aisle seats."]
    assert run.rejections == {"content-too-long": 1}
    [outcome] = drain(llm_engine)
    assert outcome.action == "create"  # curation takes it, nothing dead-letters


def test_a_models_proposals_name_the_turn_they_came_from_and_are_queued_in_turn_order(llm_engine, provider,
                                                                                      personal, clock):
    provider.script(OBSERVER, _reply(_proposal("Porto", "User's sister Anna moved to Porto.", confidence=0.95),
                                     _proposal("Lisbon", "User's sister Anna lives in Lisbon.", confidence=0.9)))
    llm_engine.add_turn(personal, user="My sister Anna lives in Lisbon.")
    llm_engine.add_turn(personal, user="Book me a table for two tonight.")
    llm_engine.add_turn(personal, user="Oh, and Anna moved to Porto last month.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert {p.title: p.turns for p in run.proposals} == {"Porto": (3,), "Lisbon": (1,)}
    with llm_engine.db.snapshot() as conn:
        queued = [json.loads(r["payload_json"])["provenance"]["turns"] for r in rows(
            conn, "SELECT payload_json FROM memory_checkpoints ORDER BY created_at, rowid")]
    assert queued == [[1], [3]]  # the newest said lands last


def test_without_an_llm_one_run_reads_every_turn_however_long_the_session(engine, personal, clock):
    """Windows are for what a model is sent; the rules read every turn of the run."""
    engine.add_turn(personal, user="My home airport is OAK.", assistant="def f():\n    pass\n" * 2000)
    engine.add_turn(personal, user="I'm a Delta SkyMiles Gold member.", assistant="def g():\n    pass\n" * 2000)
    clock.advance(90_000)
    [run] = engine.writepath.scheduler.run_once(clock())
    assert run.decided_by == "rule" and len(run.checkpoint_ids) == 2
    with engine.db.snapshot() as conn:
        assert [r["through_turn"] for r in rows(conn, "SELECT through_turn FROM observer_runs")] == [2]


def test_in_a_team_session_the_model_is_told_so_and_a_speakers_own_preference_is_not_kept(llm_engine, provider,
                                                                                           clock):
    """A walk: with an LLM, "I prefer aisle seats…" said in a team session became a team memory every
    teammate reads; the prompt did not say the session was a team's. The rules keep it out; so now
    does the model's path, and the model is told."""
    provider.script(OBSERVER, _reply(
        _proposal("Deploy platform", "The team deploys the API with Kubernetes on GKE.", subjectKind="project"),
        _proposal("Seat preference", "User prefers aisle seats on long flights.")))
    team = llm_engine.open_session("team", "work")
    llm_engine.add_turn(team, user="We deploy the API with Kubernetes on GKE. I prefer aisle seats on long flights.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert [p.title for p in run.proposals] == ["Deploy platform"]
    assert run.rejections == {"about-the-speaker-in-a-team-session": 1}
    [sent] = provider.calls(OBSERVER)
    assert json.loads(sent["messages"][1]["content"])["sessionAudience"] == "team"


def test_the_run_log_says_how_many_proposals_were_queued_and_how_many_were_blocked_as_secrets(
        llm_engine, provider, personal, clock, caplog):
    """A walk's log said proposals=3 of three passwords the model wrote out, none of which was queued."""
    provider.script(OBSERVER, _reply(
        _proposal("Seat preference", "User prefers aisle seats."),
        _proposal("GitHub token", "User's GitHub token is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ))
    llm_engine.add_turn(personal, user="Aisle seats please, and keep my GitHub token handy.")
    clock.advance(90_000)
    with caplog.at_level("INFO", logger="keepmind"):
        [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert len(run.proposals) == 2 and len(run.checkpoint_ids) == 1
    [line] = [r.getMessage() for r in caplog.records if "session_distillation_completed" in r.getMessage()]
    assert line.endswith("proposals=2 queued=1 blocked_as_secret=1")


@pytest.mark.parametrize("before, after", [
    ("I'm vegetarian.", "I'm not vegetarian anymore, I eat fish now."),
    ("I'm vegetarian.", "I'm pescatarian now, not vegetarian."),
    ("I always use Neovim for editing.", "I no longer use Neovim, I switched to VS Code."),
    ("I drink coffee every morning.", "I stopped drinking coffee."),
])
def test_a_change_goes_into_the_memory_it_changes_newest_first(engine, personal, clock, before, after):
    """A walk: "I'm pescatarian now, not vegetarian." was kept beside "I'm vegetarian.", and dinner
    tasks were given the stale diet; "I'm not vegetarian anymore…" was not learnt at all."""
    for said in (before, after):
        engine.add_turn(personal, user=said, assistant="Noted.")
        clock.advance(90_000)
        engine.writepath.scheduler.run_once(clock())
        drain(engine)
        clock.advance(DAY_MS)
    [memory] = engine.list_memories(personal)
    assert memory.body.startswith(after) and "_[earlier, as of" in memory.body
    # the earlier statement below, as it was kept (a tool is kept in the third person)
    assert memory.body.rstrip().endswith(before.replace("I always use", "User always uses"))


def test_a_plain_negation_of_another_thing_is_a_memory_of_its_own(engine, personal, clock):
    for said in ("I drink coffee every morning.", "I don't like tea."):
        engine.add_turn(personal, user=said, assistant="Noted.")
        clock.advance(90_000)
        engine.writepath.scheduler.run_once(clock())
        drain(engine)
    assert sorted(m.body for m in engine.list_memories(personal)) == ["I don't like tea.",
                                                                      "I drink coffee every morning."]
