"""Fixtures: a live Keepmind server (real waitress on a loopback port 0) with a fake clock.

The suite runs with --import-mode=importlib, so the helper module is loaded by path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

LIVE_PY = Path(__file__).resolve().parent / "live.py"


def _live_module():
    name = "keepmind_tests_live"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, LIVE_PY)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def start_live():
    """`start_live(home, clock=None, **settings)` -> Live: a real server; call .stop() when done."""
    return _live_module().start_live


@pytest.fixture
def live(tmp_path, clock, start_live):
    server = start_live(tmp_path / "home", clock=clock)
    yield server
    server.stop()


@pytest.fixture
def api(live):
    with live.client() as client:
        yield client
