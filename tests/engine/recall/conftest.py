"""Recall fixtures: an engine with the real offline embedder loaded, and small stores."""

from __future__ import annotations

import pytest

from keepmind.engine import open_engine
from keepmind.engine.settings import defaults
from support.stores import UNHURRIED_SETTINGS


@pytest.fixture
def model_engine(offline_models_home, clock):
    # Budgets a loaded machine cannot run out of: these tests are about recall's choices.
    settings = defaults().with_overrides(memory__embeddings__auto_download=False, **UNHURRIED_SETTINGS)
    eng = open_engine(offline_models_home, settings=settings, clock=clock, start_workers=False)
    eng.models.load(download=False, repair=False)
    assert eng.models.embedder() is not None, eng.models.status_reasons()
    yield eng
    eng.close()
