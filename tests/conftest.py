"""Shared fixtures: real SQLite files in tmp_path, a fake clock, engines and sessions.

This file is a composition root: it may set environment variables for the code under test.
"""

from __future__ import annotations

import pytest

from engine import open_engine
from engine.clock import FakeClock
from engine.settings import defaults


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """No test ever touches the real user data dir."""
    monkeypatch.setenv("KEEPMIND_HOME", str(tmp_path_factory.mktemp("keepmind-home")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def engine(home, clock):
    eng = open_engine(home, settings=defaults(), clock=clock, start_workers=False)
    yield eng
    eng.close()


@pytest.fixture
def personal(engine):
    return engine.open_session("personal", "work")


@pytest.fixture
def team(engine):
    return engine.open_session("team", "work")
