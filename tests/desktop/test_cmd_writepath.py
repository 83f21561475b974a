"""`keepmind checkpoints ...` and `keepmind eval extractor` end to end through the CLI."""

import json

from keepmind.desktop.cli import main
from keepmind.desktop.commands.writepath import llm_api_key
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults
from keepmind.engine.writepath import checkpoints


def _dead_letter(home):
    with open_engine(home, settings=defaults(), start_workers=False) as engine:
        session = engine.open_session("personal", "work")
        queued = engine.store_memory(session, "Wifi", "The office wifi is called Mothership.")
        engine.write(lambda conn: conn.execute(
            "UPDATE memory_checkpoints SET status='dead', attempts=5, last_error='curator LLM timeout'"
            " WHERE checkpoint_id=?", (queued.checkpoint_id,)))
        return queued.checkpoint_id


def test_list_retry_and_drain(tmp_path, capsys):
    home = tmp_path / "h"
    cp = _dead_letter(home)
    assert main(["checkpoints", "list", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "dead: 1" in out and cp in out and "last error: curator LLM timeout" in out
    assert main(["checkpoints", "retry", cp, "--home", str(home)]) == 0
    assert main(["checkpoints", "list", "--status", "pending", "--json", "--home", str(home)]) == 0
    listed = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert [c["checkpoint_id"] for c in listed["checkpoints"]] == [cp]
    assert main(["checkpoints", "drain", "--home", str(home)]) == 0
    assert "create" in capsys.readouterr().out
    with open_engine(home, settings=defaults(), start_workers=False) as engine:
        with engine.db.snapshot() as conn:
            assert checkpoints.list_checkpoints(conn, "completed")[0]["checkpoint_id"] == cp


def test_retry_of_unknown_or_live_checkpoint_is_a_clear_error(tmp_path, capsys):
    home = tmp_path / "h"
    _dead_letter(home)
    assert main(["checkpoints", "retry", "cp-nope", "--home", str(home)]) == 2
    assert "no checkpoint cp-nope" in capsys.readouterr().err


def test_eval_extractor_prints_precision_and_recall(tmp_path, capsys):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps([{
        "conversation": {"speaker_a": "Ana", "speaker_b": "Ben", "session_1": [
            {"dia_id": "D1:1", "speaker": "Ana", "text": "I just adopted a rescue greyhound named Pixel!"}]},
        "observation": {"session_1_observation": {"Ana": [["Ana adopted a rescue greyhound named Pixel.", "D1:1"]]}},
    }]))
    out_json = tmp_path / "out.json"
    assert main(["eval", "extractor", "--data", str(data), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "precision 1.000  recall 1.000" in out and "netclaw retired rules" in out
    assert json.loads(out_json.read_text())["rules"]["matched_gold"] == 1
    assert main(["eval", "extractor", "--data", str(tmp_path / "missing.json")]) == 2


def test_api_key_comes_from_the_named_environment_variable():
    settings = defaults().with_overrides(memory__llm__api_key_env="MY_LLM_KEY")
    assert llm_api_key(settings, {"MY_LLM_KEY": "abc"}) == "abc"
    assert llm_api_key(defaults(), {"MY_LLM_KEY": "abc"}) is None
