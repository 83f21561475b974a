"""The durable checkpoint queue: leases, expiry, backoff, dead letters, one-transaction completion."""

import json

import pytest

from keepmind.engine.db import one, scalar
from keepmind.engine.errors import InvalidInput
from keepmind.engine.writepath import checkpoints, curation
from keepmind.engine.writepath.checkpoints import LeaseLost

OWNER_A = "hostx:1:a"
OWNER_B = "hostx:1:b"


def _enqueue(engine, trigger="explicit-memory-request", content="The build server is ci-7.", **kw):
    payload = {"proposal": {"memory_class": "durable_fact", "title": "Build server", "content": content,
                            "explicit": True}, "source": "tool"}
    return engine.write(checkpoints.enqueue, trigger=trigger, payload=payload, audience="personal",
                        boundary="work", session_id=None, now=engine.now(), **kw).checkpoint_id


def _row(engine, cp):
    with engine.db.snapshot() as conn:
        return one(conn, "SELECT * FROM memory_checkpoints WHERE checkpoint_id=?", (cp,))


def test_lease_takes_highest_priority_then_oldest(engine, clock):
    observed = _enqueue(engine, "observed-memory-proposals", "a")
    clock.advance(1)
    explicit_new = _enqueue(engine, "explicit-memory-request", "b")
    clock.advance(1)
    compaction = _enqueue(engine, "compaction-boundary", "c")
    order = []
    for _ in range(3):
        lease = engine.write(checkpoints.lease_next, OWNER_A, clock(), 60_000)
        order.append(lease.checkpoint_id)
    assert order == [explicit_new, compaction, observed]
    assert engine.write(checkpoints.lease_next, OWNER_A, clock(), 60_000) is None


def test_the_list_is_newest_first_whatever_the_priority_with_dead_letters_on_top(engine, clock):
    """Curation takes the highest priority first; a person reading the list looks for what just came."""
    explicit = [_enqueue(engine, "explicit-memory-request", f"stored {i}") for i in range(3)]
    clock.advance(1)
    observed = _enqueue(engine, "observed-memory-proposals", "just observed")
    with engine.db.snapshot() as conn:
        listed = [r["checkpoint_id"] for r in checkpoints.list_checkpoints(conn, limit=2)]
    assert listed == [observed, explicit[-1]]
    engine.db.write(lambda conn: conn.execute("UPDATE memory_checkpoints SET status='dead' WHERE checkpoint_id=?",
                                              (explicit[0],)))
    with engine.db.snapshot() as conn:
        assert [r["checkpoint_id"] for r in checkpoints.list_checkpoints(conn, limit=2)] == [explicit[0], observed]


def test_expired_lease_returns_to_pending_and_counts_an_attempt(engine, clock):
    cp = _enqueue(engine)
    lease = engine.write(checkpoints.lease_next, OWNER_A, clock(), 10_000)
    assert _row(engine, cp)["status"] == "leased" and lease.attempts == 1
    clock.advance(9_999)
    assert engine.write(checkpoints.reclaim, clock(), 5) == 0
    clock.advance(1)
    assert engine.write(checkpoints.reclaim, clock(), 5) == 1
    row = _row(engine, cp)
    assert row["status"] == "pending" and row["attempts"] == 1 and "lease expired" in row["last_error"]
    # the first owner lost it: completing now must fail and change nothing
    lease_b = engine.write(checkpoints.lease_next, OWNER_B, clock(), 10_000)
    assert lease_b.checkpoint_id == cp and lease_b.attempts == 2
    with pytest.raises(LeaseLost):
        engine.write(checkpoints.complete, cp, OWNER_A, clock())
    assert _row(engine, cp)["lease_owner"] == OWNER_B


def test_failures_back_off_then_dead_letter_with_last_error_and_retry(engine, clock):
    cp = _enqueue(engine)
    waits = []
    for attempt in range(1, 6):
        lease = engine.write(checkpoints.lease_next, OWNER_A, clock(), 10_000)
        assert lease is not None and lease.attempts == attempt
        status = engine.write(checkpoints.fail, cp, OWNER_A, f"boom {attempt}", clock(), max_attempts=5)
        row = _row(engine, cp)
        if attempt < 5:
            assert status == "pending"
            waits.append(row["available_at"] - clock())
            assert engine.write(checkpoints.lease_next, OWNER_A, clock(), 10_000) is None  # backing off
            clock.advance(row["available_at"] - clock())
        else:
            assert status == "dead"
    assert waits == sorted(waits) and waits[0] < waits[-1]  # exponential
    row = _row(engine, cp)
    assert row["status"] == "dead" and "boom 5" in row["last_error"]
    with engine.db.snapshot() as conn:
        assert scalar(conn, "SELECT COUNT(*) FROM curation_events WHERE checkpoint_id=? AND action='dead_letter'",
                      (cp,)) == 1
    assert engine.checkpoint_overview()["counts"]["dead"] == 1
    engine.write(checkpoints.retry, cp, clock())
    assert _row(engine, cp)["status"] == "pending" and _row(engine, cp)["attempts"] == 0
    with pytest.raises(InvalidInput):
        engine.write(checkpoints.retry, cp, clock())  # only dead letters can be retried


def test_lease_of_a_dead_worker_process_is_reclaimed_without_waiting(engine, clock):
    cp = _enqueue(engine)
    dead_owner = f"{checkpoints.owner_id('x').split(':')[0]}:999999999:zz"
    engine.write(checkpoints.lease_next, dead_owner, clock(), 3_600_000)
    assert engine.write(checkpoints.reclaim, clock(), 5, checkpoints.owner_alive) == 1
    assert _row(engine, cp)["status"] == "pending"


def test_stopping_a_worker_releases_its_lease_without_spending_an_attempt(engine, clock):
    cp = _enqueue(engine)
    worker = engine.writepath.curation
    engine.write(checkpoints.lease_next, worker.owner, clock(), 60_000)
    worker.stop()
    row = _row(engine, cp)
    assert row["status"] == "pending" and row["attempts"] == 0 and row["lease_owner"] is None


def test_completion_and_memory_writes_are_one_transaction(engine, clock, monkeypatch):
    cp = _enqueue(engine, content="The staging database lives on db-staging-3.")

    def explode(*args, **kwargs):
        raise RuntimeError("disk on fire after the memory insert")

    monkeypatch.setattr(checkpoints, "complete", explode)
    outcome = engine.writepath.curation.run_once(clock())
    assert outcome.status == "retry" and "disk on fire" in outcome.reason
    with engine.db.snapshot() as conn:
        assert scalar(conn, "SELECT COUNT(*) FROM memory_documents") == 0
        assert scalar(conn, "SELECT COUNT(*) FROM curation_events WHERE checkpoint_id=?", (cp,)) == 0
    monkeypatch.undo()
    clock.advance(checkpoints.backoff_ms(1))
    outcome = engine.writepath.curation.run_once(clock())
    assert outcome.status == "completed" and outcome.action == "create"
    with engine.db.snapshot() as conn:
        assert scalar(conn, "SELECT COUNT(*) FROM memory_documents") == 1


def test_malformed_payload_is_dead_lettered_at_once_with_its_reason(engine, clock):
    engine.write(lambda conn: conn.execute(
        "INSERT INTO memory_checkpoints(checkpoint_id, trigger_type, priority, payload_json, audience,"
        " boundary, available_at, created_at, updated_at) VALUES ('cp-bad', 'explicit-memory-request',"
        " 100, '{not json', 'personal', 'work', 0, 0, 0)"))
    outcome = engine.writepath.curation.run_once(clock())
    assert outcome.status == "dead"
    row = _row(engine, "cp-bad")
    assert row["status"] == "dead" and "malformed checkpoint payload" in row["last_error"]


def test_unknown_trigger_is_refused(engine):
    with pytest.raises(InvalidInput):
        engine.write(checkpoints.enqueue, trigger="turn-complete", payload={}, audience="personal",
                     boundary="work", session_id=None, now=engine.now())


def test_checkpoint_payload_is_the_proposal(engine):
    cp = _enqueue(engine, content="Deploys go out on Tuesdays.")
    payload = json.loads(_row(engine, cp)["payload_json"])
    assert payload["proposal"]["content"] == "Deploys go out on Tuesdays."
    assert curation.SOURCES_BY_TRIGGER["explicit-memory-request"] == "tool"
