"""With a cross-encoder installed, it is the gate; when it runs out of time recall says so."""

import pytest

from keepmind.engine import open_engine
from keepmind.engine.models.service import ModelRuntime
from keepmind.engine.recall.pipeline import RecallConfig
from keepmind.engine.settings import defaults
from support import tiny_models
from support.stores import UNHURRIED


@pytest.fixture
def gated(tmp_path, clock):
    home = tmp_path / "home"
    tiny = tiny_models
    tiny.install_tiny(home / "models", "tiny-embed")
    tiny.install_tiny(home / "models", "tiny-gate", role="gate")
    settings = defaults().with_overrides(memory__embeddings__model_id="tiny-embed",
                                         memory__embeddings__auto_download=False)
    engine = open_engine(home, settings=settings, clock=clock, start_workers=False)
    runtime = ModelRuntime(engine, gate_id="tiny-gate")
    engine.on_write(runtime.on_written)
    engine.models = runtime
    runtime.load()
    assert runtime.gate() is not None and runtime.embedder() is not None
    yield engine
    engine.close()


def test_the_cross_encoder_keeps_what_it_scores_above_its_threshold(gated):
    sid = gated.open_session("personal", "work")
    dark = gated.store(sid, "theme", "the user prefers dark themes").id
    train = gated.store(sid, "train", "the train leaves at noon").id
    t = gated.recaller.trace(gated.scope(sid), "what theme does the user like", config=RecallConfig(floor=-1.0, **UNHURRIED))
    assert t.gate_kind == "cross_encoder"
    kept = {d.id: d.kept for d in t.gate}
    assert kept[dark] is True and kept.get(train) in (False, None)
    assert [i.id for i in t.injected] == [dark] and "gate_ms" in t.timings


def test_a_cross_encoder_out_of_time_degrades_with_a_named_reason(gated):
    sid = gated.open_session("personal", "work")
    gated.store(sid, "theme", "the user prefers dark themes")
    t = gated.recaller.trace(gated.scope(sid), "what theme does the user like",
                             config=RecallConfig(floor=-1.0, gate_budget_ms=0))
    assert "gate:cross_encoder_sub_budget_exceeded" in t.degraded and t.gate_kind != "cross_encoder"
