"""Pausing memory: no turns recorded, nothing new kept, nothing recalled; it survives a restart,
and the CLI, the API and the engine share the one switch."""

from __future__ import annotations

from keepmind.desktop.cli import main
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults


def test_paused_memory_records_keeps_and_recalls_nothing_until_resumed(engine, personal):
    engine.store(personal, "Coffee", "The user drinks oat-milk flat whites.")
    engine.pause()
    status = engine.status()
    assert status["status"] == "paused" and "keepmind resume" in status["reasons"][0]
    assert engine.add_turn(personal, user="I like tea now.", assistant="Noted.") == 0
    assert engine.turns(personal) == []
    assert engine.store_memory(personal, "Tea", "The user likes tea.").action == "paused"
    assert [r.action for r in engine.add_findings(personal, ["a finding"])] == ["paused"]
    result = engine.recall(personal, "what coffee does the user drink?")
    assert result.block is None and result.items == [] and result.degraded == ["memory_paused"]
    assert engine.checkpoint_overview()["counts"]["pending"] == 0
    assert engine.find(personal, "flat whites")  # what is stored can still be read and corrected
    engine.resume()
    assert engine.status()["status"] == "healthy"
    assert engine.add_turn(personal, user="I like tea now.", assistant="Noted.") == 1


def test_the_pause_survives_a_restart(home, clock):
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as eng:
        eng.pause()
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as eng:
        assert eng.paused and eng.status()["status"] == "paused"


def test_the_observer_does_not_distil_while_paused(engine, personal, clock):
    engine.add_turn(personal, user="I always fly out of Boston Logan.", assistant="Noted.")
    engine.pause()
    clock.advance(10 * 60_000)
    assert engine.writepath.scheduler.run_once() == []
    engine.resume()
    assert engine.writepath.scheduler.run_once() != []


def test_pause_and_resume_over_the_api_and_agents_get_nothing(live, api):
    sid = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["session"]["id"]
    paused = api.post("/pause").json()
    assert paused["memory"]["status"] == "paused"
    assert api.get("/status").json()["memory"]["status"] == "paused"
    recall = api.post(f"/sessions/{sid}/recall", json={"message": "anything about coffee"}).json()
    assert recall["block"] is None and recall["degraded"] == ["memory_paused"]
    turn = api.post(f"/sessions/{sid}/turns", json={"user": "hello", "assistant": "hi"}).json()
    assert turn == {"ok": True, "turn": 0, "recorded": False}
    with live.client(live.make_token("agent", "team")) as agent:
        refused = agent.post("/resume")
    assert refused.status_code == 403 and "the local token" in refused.json()["error"]
    assert api.post("/resume").json()["memory"]["status"] == "healthy"


def test_the_cli_switch_reaches_a_running_instance_or_sets_the_next_start(tmp_path, start_live, capsys):
    home = tmp_path / "home"
    home.mkdir()
    assert main(["pause", "--home", str(home)]) == 0
    assert "no Keepmind is running" in capsys.readouterr().out
    live = start_live(home)
    try:
        assert live.engine.status()["status"] == "paused"  # the state set before the start
        assert main(["resume", "--home", str(home)]) == 0
        out = capsys.readouterr().out
        assert "memory: healthy" in out and live.url in out
        assert not live.engine.paused
    finally:
        live.stop()
