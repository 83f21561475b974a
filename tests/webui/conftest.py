"""Fixtures of the page tests that run against a real server: `server` (a live Keepmind on a
loopback port) and `browser` (an HTTP client signed in as `keepmind open` signs in, and the
pages' CSRF token)."""

from __future__ import annotations

import re

import httpx
import pytest


@pytest.fixture
def server(tmp_path, clock, start_live):
    live = start_live(tmp_path / "home", clock=clock)
    yield live
    live.stop()


@pytest.fixture
def browser(server):
    with server.client() as api:
        url = api.post("/ui/links", json={}).json()["url"]
    web = httpx.Client(base_url=server.url, timeout=30)
    assert web.get(url).status_code == 303
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', web.get("/").text).group(1)
    yield web, csrf
    web.close()
