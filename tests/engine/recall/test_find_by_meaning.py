"""find_memories (the API, MCP and `keepmind memories list -q`): words first, then meaning for what
the words did not find. A newcomer's "allergies" found nothing: FTS5's porter stems it `allergi`,
and "allergic" `allerg`."""

from __future__ import annotations

import json

import pytest

from keepmind.desktop.cli import main as cli

pytestmark = pytest.mark.offline_model

FACTS = ["I am allergic to peanuts.", "I write code in Neovim.", "My sister Anna lives in Lisbon.",
         "I play the cello on Tuesdays."]


def _stored(engine) -> tuple[str, dict[str, str]]:
    sid = engine.open_session("personal", "work")
    ids = {text: engine.store(sid, "", text).id for text in FACTS}
    engine.models.repair_gaps()
    return sid, ids


def test_what_the_words_miss_is_found_by_meaning_and_words_still_come_first(model_engine):
    sid, ids = _stored(model_engine)
    assert [i.id for i in model_engine.find(sid, "allergies", limit=1)] == [ids["I am allergic to peanuts."]]
    assert [i.id for i in model_engine.find(sid, "cello", limit=5)][0] == ids["I play the cello on Tuesdays."]
    found = [i.id for i in model_engine.find(sid, "which text editor", limit=5)]
    assert found and found[0] == ids["I write code in Neovim."]
    # nothing near in meaning (under the embedder's floor) is not padded in
    assert model_engine.find(sid, "quarterly tax filing deadlines", limit=5) == []


def test_without_an_embedder_find_is_by_words_alone(model_engine):
    sid, ids = _stored(model_engine)
    model_engine.settings = model_engine.settings.with_overrides(memory__embeddings__enabled=False)
    assert model_engine.find(sid, "allergies") == []
    assert [i.id for i in model_engine.find(sid, "allergic")] == [ids["I am allergic to peanuts."]]


def test_the_cli_search_finds_by_meaning_too(model_engine, offline_models_home, capsys):
    _stored(model_engine)
    model_engine.close()
    assert cli(["memories", "list", "-q", "allergies", "--json", "--home", str(offline_models_home)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["content"] == "I am allergic to peanuts."
