"""A memory written by hand (Engine.write_by_hand, the browser's Write a memory) is refused when it
says a claim deleted as wrong in other words, as curation refuses what an agent stores, with the real
offline embedder; its correction is another claim and is written."""

import pytest

from keepmind.engine import open_engine
from keepmind.engine.settings import defaults

pytestmark = pytest.mark.offline_model


@pytest.fixture
def engine(offline_models_home, clock):
    eng = open_engine(offline_models_home, settings=defaults().with_overrides(memory__embeddings__auto_download=False),
                      clock=clock, start_workers=False)
    eng.models.load()
    assert eng.models.embedder() is not None, eng.models.status_reasons()
    yield eng
    eng.close()


def test_a_claim_deleted_as_wrong_is_not_written_back_by_hand_in_other_words(engine):
    s = engine.open_session("personal", "home")
    doc = engine.write_by_hand(s, "", "I have a dog named Rolo.")
    assert doc.action == "created"
    engine.update(s, doc.id, delete=True)
    for again in ("I own a dog called Rolo!", "I have a dog named Rolo, he is 3."):
        result = engine.write_by_hand(s, "", again)
        assert (result.action, result.id) == ("tombstoned", None), again
    assert engine.write_by_hand(s, "", "I have a cat named Rolo.").action == "created"  # another claim
    assert engine.write_by_hand(s, "", "I have a dog named Rolo.", ).action == "tombstoned"
    assert engine.write_by_hand(engine.open_session("personal", "work"), "", "I own a dog called Rolo!").action \
        == "created"  # another boundary: the deletion does not reach it
