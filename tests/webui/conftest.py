"""Fixtures: a live Keepmind server (real waitress on a loopback port 0) with a fake clock."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest


def _load_live():
    """tests/webui/live.py, loaded by path once (the suite uses --import-mode=importlib)."""
    name = "keepmind_tests_live"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "webui" / "live.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


start_live, live = _load_live().start_live_fixture, _load_live().live_fixture


@pytest.fixture
def api(live):
    with live.client() as client:
        yield client
