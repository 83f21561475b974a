"""What gates recall is told one way: `keepmind status` (and the overview), doctor and the models
page read the same answer. Without the cross-encoder the offline pack's calibrated feature gate
is the intended setup, not a degraded one; with no gate at all recall really is degraded."""

from __future__ import annotations

import re
from html import unescape

import pytest

from keepmind.engine.doctor import run_checks
from keepmind.engine.models.gatehealth import gate_health
from support.pages import signed_in

GATE = "ms-marco-minilm-l-6-v2"


@pytest.mark.parametrize(("given", "kind", "status"), [
    ({"setting": False, "cross_encoder": GATE}, "off", "disabled"),
    ({"cross_encoder": GATE, "threshold": 0.4, "threshold_source": "manifest"}, "cross_encoder", "ok"),
    ({"offline_for": "all-minilm-l6-v2", "missing": "not installed"}, "feature", "ok"),
    ({"embeddings_enabled": False}, "lexical", "disabled"),
    ({"embeddings_enabled": False, "setting": True, "missing": "not installed"}, "lexical", "degraded"),
    ({"missing": "not installed", "problem": "gate: unavailable"}, "none", "degraded"),
])
def test_one_answer_for_each_way_recall_can_be_gated(given, kind, status):
    health = gate_health(**{"setting": None, "embeddings_enabled": True, "gate_id": GATE, **given})
    assert (health.kind, health.status) == (kind, status)
    assert "degraded" not in health.summary  # the summary says what decides, the status whether that is a problem
    assert health.reason == (given.get("problem") if status == "degraded" else None)


def models_page(engine) -> str:
    client, _ = signed_in(engine)
    return client.get("/models").get_data(as_text=True)


def gate_line(html: str) -> str:
    found = re.search(r"<dt>Relevance gate</dt><dd([^>]*)>(.*?)</dd>", html, re.S)
    return found.group(1) + " " + unescape(" ".join(found.group(2).split()))


def doctor_gate(engine):
    return next(c for c in run_checks(engine) if c.name == "Relevance gate")


def test_the_offline_feature_gate_is_the_intended_setup_everywhere(offline_models_home, make_engine):
    engine = make_engine(offline_models_home, memory__embeddings__auto_download=False)
    engine.models.load(download=False)
    health = engine.models.gate_health()
    assert engine.models.gate() is None and health.kind == "feature"
    assert health.summary.startswith("offline feature gate calibrated for all-minilm-l6-v2")
    assert f"the cross-encoder {GATE} is not installed" in health.summary
    assert engine.status() == {"status": "healthy", "reasons": []}  # the overview and `keepmind status`
    check = doctor_gate(engine)
    assert check.level == "pass" and check.message.startswith(health.summary)
    assert engine.models.details()["gate"]["status"] == "ok"
    line = gate_line(models_page(engine))
    assert health.summary in line and "degraded" not in line and "warn-text" not in line


def test_no_gate_at_all_is_degraded_everywhere(make_engine):
    engine = make_engine(memory__embeddings__auto_download=False)
    engine.models.load(download=False)
    health = engine.models.gate_health()
    assert (health.kind, health.status) == ("none", "degraded")
    status = engine.status()
    assert status["status"] == "degraded" and health.reason in status["reasons"]
    check = doctor_gate(engine)
    assert check.level == "warning" and check.message.startswith(health.summary)
    assert engine.models.details()["gate"]["status"] == "degraded"
    line = gate_line(models_page(engine))
    assert health.summary in line and "warn-text" in line


def test_with_embeddings_off_the_lexical_gate_decides_and_nothing_is_degraded(make_engine):
    engine = make_engine(memory__embeddings__enabled=False)
    engine.models.load(download=False)
    health = engine.models.gate_health()
    assert (health.kind, health.status) == ("lexical", "disabled")
    assert engine.status() == {"status": "healthy", "reasons": []}
    assert doctor_gate(engine).level == "pass"
    line = gate_line(models_page(engine))
    assert "embeddings are off: recall is lexical" in line and "warn-text" not in line
