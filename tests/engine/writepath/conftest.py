"""Write-path fixtures: the scripted LLM provider on loopback and an engine that uses it."""

from __future__ import annotations

import pytest

from keepmind.engine import open_engine
from support.provider import ScriptedProvider, llm_settings


@pytest.fixture
def provider():
    p = ScriptedProvider().start()
    yield p
    p.stop()


@pytest.fixture
def llm_engine(home, clock, provider):
    eng = open_engine(home, settings=llm_settings(provider), clock=clock, start_workers=False,
                      llm_api_key="test-key-not-secret")
    yield eng
    eng.close()
