"""Fixtures: an API client for the live server (`live` and `start_live` come from tests/conftest.py)."""

import pytest


@pytest.fixture
def api(live):
    with live.client() as client:
        yield client
