"""Fixtures: a live server (real waitress on a loopback port 0) with a fake clock."""

from __future__ import annotations

import pytest

from .live import start_live


@pytest.fixture
def live(tmp_path, clock):
    server = start_live(tmp_path / "home", clock=clock)
    yield server
    server.stop()


@pytest.fixture
def api(live):
    with live.client() as client:
        yield client
