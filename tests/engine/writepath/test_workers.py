"""The workers' own threads: started by open_engine(start_workers=True), stopped by close()."""

import threading

from keepmind.engine import open_engine
from keepmind.engine.db import one
from keepmind.engine.settings import defaults
from keepmind.engine.writepath import checkpoints


def test_started_workers_curate_on_their_own_and_close_stops_them(home, clock):
    settings = defaults().with_overrides(memory__embeddings__enabled=False)
    engine = open_engine(home, settings=settings, clock=clock, start_workers=True)
    written = threading.Event()
    engine.on_write(lambda ids: written.set())
    session = engine.open_session("personal", "work")
    engine.store_memory(session, "Backups", "Backups run nightly at 02:00 UTC to the NAS.")
    assert written.wait(10)  # the curation thread was woken by the enqueue
    assert engine.find(session, "backups")[0].body == "Backups run nightly at 02:00 UTC to the NAS."
    threads = {t.name for t in threading.enumerate()}
    assert {"keepmind-curation", "keepmind-observer"} <= threads
    engine.close()
    threads = {t.name for t in threading.enumerate()}
    assert not {"keepmind-curation", "keepmind-observer"} & threads


def test_close_hands_back_a_lease_held_by_the_worker(home, clock):
    engine = open_engine(home, settings=defaults(), clock=clock, start_workers=False)
    session = engine.open_session("personal", "work")
    queued = engine.store_memory(session, "Backups", "Backups run nightly.")
    engine.write(checkpoints.lease_next, engine.writepath.curation.owner, clock(), 60_000)
    engine.close()
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as again:
        with again.db.snapshot() as conn:
            row = one(conn, "SELECT status, lease_owner FROM memory_checkpoints WHERE checkpoint_id=?",
                      (queued.checkpoint_id,))
    assert row == {"status": "pending", "lease_owner": None}


def test_memory_disabled_pauses_formation_and_keeps_the_queue(home, clock):
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as engine:
        session = engine.open_session("personal", "work")
        engine.store_memory(session, "Backups", "Backups run nightly.")
        engine.add_turn(session, user="I'm a member of the Sierra Club.")
    clock.advance(120_000)
    off = defaults().with_overrides(memory__enabled=False)
    with open_engine(home, settings=off, clock=clock, start_workers=False) as engine:
        assert engine.writepath.curation.run_once(clock()).status == "idle"
        assert engine.writepath.scheduler.run_once(clock()) == []
        assert engine.checkpoint_overview()["counts"]["pending"] == 1
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as engine:
        assert engine.writepath.curation.run_once(clock()).status == "completed"
        assert len(engine.writepath.scheduler.run_once(clock())) == 1


def test_doctor_reports_the_curation_llm(home, clock, provider):
    from keepmind.engine.doctor import run_checks
    from support.provider import llm_settings

    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as engine:
        [check] = [c for c in run_checks(engine) if c.name == "Curation LLM"]
        assert check.level == "pass" and "none configured" in check.message
    with open_engine(home, settings=llm_settings(provider), clock=clock, start_workers=False) as engine:
        provider.script("You distil a conversation", ("status", 502, "bad gateway"))
        session = engine.open_session("personal", "work")
        engine.add_turn(session, user="I prefer aisle seats.")
        clock.advance(90_000)
        engine.writepath.scheduler.run_once(clock())
        [check] = [c for c in run_checks(engine) if c.name == "Curation LLM"]
    assert check.level == "warning" and "in the last 24 h 1 observer run failed (of 1 observer run that asked the model)" in check.message and "HTTP 502" in check.message
    assert "check the server and memory.llm.timeout_seconds" in check.message  # the remedy
    keyed = llm_settings(provider, memory__llm__api_key_env="KEEPMIND_TEST_UNSET_KEY")
    with open_engine(home, settings=keyed, clock=clock, start_workers=False) as engine:
        [check] = [c for c in run_checks(engine) if c.name == "Curation LLM"]
    assert check.level == "warning" and "KEEPMIND_TEST_UNSET_KEY" in check.message


def test_doctor_points_a_refused_model_name_at_memory_llm_model(home, clock, provider):
    from keepmind.engine.doctor import run_checks
    from support.provider import llm_settings

    with open_engine(home, settings=llm_settings(provider), clock=clock, start_workers=False) as engine:
        provider.script("You distil a conversation", ("status", 404, '{"error": "model nope not found"}'))
        engine.add_turn(engine.open_session("personal", "work"), user="I prefer aisle seats.")
        clock.advance(90_000)
        engine.writepath.scheduler.run_once(clock())
        [check] = [c for c in run_checks(engine) if c.name == "Curation LLM"]
    assert "HTTP 404" in check.message and "check memory.llm.model and memory.llm.base_url" in check.message
    assert "timeout_seconds" not in check.message


def test_doctor_says_how_many_tries_a_dead_letter_really_took(home, clock):
    from keepmind.engine.doctor import run_checks

    def backlog(engine):
        [check] = [c for c in run_checks(engine) if c.name == "Checkpoint backlog"]
        return check

    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as engine:
        engine.write(lambda conn: conn.execute(  # a malformed payload is refused on its first try
            "INSERT INTO memory_checkpoints(checkpoint_id, trigger_type, priority, payload_json, audience,"
            " boundary, available_at, created_at, updated_at) VALUES ('cp-bad', 'explicit-memory-request',"
            " 100, '{not json', 'personal', 'work', 0, 0, 0)"))
        assert engine.writepath.curation.run_once(clock()).status == "dead"
        check = backlog(engine)
        assert check.level == "warning"
        assert "1 dead-lettered checkpoint (refused as a permanent failure after 1 try)" in check.message
        assert "5 tries" not in check.message
        session = engine.open_session("personal", "work")
        queued = engine.store_memory(session, "Backups", "Backups run nightly.").checkpoint_id
        owner = engine.writepath.curation.owner
        for attempt in range(1, 6):  # failing every one of its five tries
            engine.write(checkpoints.lease_next, owner, clock(), 60_000)
            engine.write(checkpoints.fail, queued, owner, f"boom {attempt}", clock(), max_attempts=5)
            clock.advance(checkpoints.BACKOFF_CAP_MS)
        message = backlog(engine).message
    assert message.startswith("2 dead-lettered checkpoints (1: curation gave up after 5 tries; "
                              "1: refused as a permanent failure after 1 try): ")


def test_doctor_says_a_curation_llm_saved_in_the_file_is_used_from_the_next_start(home, clock):
    """A walk saved an LLM on the Settings page and the doctor said "none configured"."""
    from keepmind.engine.doctor import run_checks

    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as engine:
        now, later = engine.change_settings({"memory.llm.base_url": "http://127.0.0.1:9/v1",
                                             "memory.llm.model": "qwen3:8b"})
        assert {"memory.llm.base_url", "memory.llm.model"} <= set(later)
        [check] = [c for c in run_checks(engine) if c.name == "Curation LLM"]
    assert check.level == "warning" and "none configured" not in check.message
    assert "qwen3:8b at http://127.0.0.1:9/v1 is saved in keepmind.json and is used from the next start" in \
        check.message
