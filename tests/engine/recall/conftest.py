"""Recall fixtures: an engine with the real offline embedder loaded, and small stores."""

from __future__ import annotations

import pytest

from keepmind.engine import open_engine
from keepmind.engine.settings import defaults


@pytest.fixture
def model_engine(offline_models_home, clock):
    settings = defaults().with_overrides(memory__embeddings__auto_download=False)
    eng = open_engine(offline_models_home, settings=settings, clock=clock, start_workers=False)
    eng.models.load(download=False, repair=False)
    assert eng.models.embedder() is not None, eng.models.status_reasons()
    yield eng
    eng.close()


FACTS = [
    ("Coffee", "The user drinks oat-milk flat whites every morning."),
    ("Dentist", "The user's dentist appointment is on 14 March at the Elm Street clinic."),
    ("Marathon", "The user is training for the Berlin marathon in September."),
    ("Sister", "The user's sister Maya lives in Lisbon and works as an architect."),
    ("Laptop", "The user's work laptop is a ThinkPad X1 running Fedora."),
]


def fill(engine, session_id, facts=FACTS):
    return [engine.store(session_id, title, body).id for title, body in facts]
