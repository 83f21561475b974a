"""The scenario harness: hand-written users' stores and the messages agents send, end to end."""

import json

import pytest

from keepmind.desktop.cli import main
from keepmind.desktop.commands.recall import repository
from keepmind.desktop.commands.scenarios import SCENARIOS
from keepmind.engine.errors import InvalidInput
from keepmind.engine.recall import scenarios

USER = {
    "name": "Ada",
    "memories": [
        {"id": "editor", "text": "I use Neovim as my editor."},
        {"id": "dog", "text": "My dog Pixel is a greyhound."},
        {"id": "seat", "text": "I always prefer a window seat when I fly."},
        {"id": "dentist", "text": "The user's dentist appointment is on 14 March at the Elm Street clinic."},
    ],
    "messages": [
        {"text": "What is the capital of Peru?", "expect": []},
        {"text": "When is my dentist appointment?", "expect": ["dentist"]},
        {"text": "Summarise the history of Rome in a paragraph.", "expect": ["dog"]},
    ],
}


def write(tmp_path, users, name="scen.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"users": users}), encoding="utf-8")
    return path


def test_scenario_files_are_read_and_bad_ones_are_refused_with_what_is_wrong(tmp_path):
    [user] = scenarios.load_scenarios(write(tmp_path, [USER]))
    assert user.name == "Ada" and list(user.memories) == ["editor", "dog", "seat", "dentist"]
    assert user.messages[0].expect == () and user.messages[1].expect == ("dentist",)
    bad = {**USER, "messages": [{"text": "Walk the dog.", "expect": ["cat"]}]}
    with pytest.raises(InvalidInput, match="memories it does not have: cat"):
        scenarios.load_scenarios(write(tmp_path, [bad]))
    with pytest.raises(InvalidInput, match="a second user named 'Ada'"):
        scenarios.load_scenarios(write(tmp_path, [USER, USER]))
    with pytest.raises(InvalidInput, match="every memory needs an id and a text"):
        scenarios.load_scenarios(write(tmp_path, [{"name": "B", "memories": [{"text": "x"}], "messages": []}]))
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not a readable scenario file"):
        scenarios.load_scenarios(tmp_path / "broken.json")
    with pytest.raises(InvalidInput, match="at least one user"):
        scenarios.load_scenarios(write(tmp_path, []))


def test_the_shipped_scenarios_load_and_about_four_in_ten_messages_need_nothing():
    for name, users in (("dev", 16), ("test", 10)):
        found = scenarios.load_scenarios(repository() / SCENARIOS / f"{name}.json")
        assert len(found) == users
        messages = [m for u in found for m in u.messages]
        assert 0.3 < sum(1 for m in messages if not m.expect) / len(messages) < 0.45
        assert all(len(m.expect) <= 3 for m in messages) and all(len(u.memories) >= 25 for u in found)


@pytest.mark.offline_model
def test_eval_scenarios_runs_end_to_end_and_names_what_went_wrong(tmp_path, offline_models_home, capsys):
    out = tmp_path / "scenarios.json"
    data = write(tmp_path, [USER])
    assert main(["eval", "scenarios", "--home", str(offline_models_home), "--data", str(data), "--show-wrong",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())["scen"]
    assert (result["n_positive"], result["n_negative"]) == (2, 1)
    # the dentist question gets its appointment, the general-knowledge question nothing; the message
    # labelled wrong on purpose (a history of Rome does not need the dog) is reported with what it
    # needed and got
    assert result["needed_injected"] == 0.5 and result["zero_injection"] == 1.0 and result["precision"] == 1.0
    assert result["by_user"] == {"Ada": {"needed_injected": 0.5, "zero_injection": 1.0}}
    assert result["config"]["model_id"] == "all-minilm-l6-v2" and result["latency_ms"]["p50"] > 0
    [wrong] = result["wrong"]
    assert wrong["message"].startswith("Summarise the history of Rome") and wrong["injected"] == []
    assert wrong["needed"] == ["My dog Pixel is a greyhound."] and len(wrong["top3"]) == 3
    printed = capsys.readouterr().out
    assert "needed memory injected 0.500" in printed and "Summarise the history of Rome" in printed
