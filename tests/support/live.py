"""A real Keepmind server on a free loopback port, for API, MCP and CLI tests.

A pytest plugin (tests/conftest.py lists it in `pytest_plugins`): the fixtures `start_live` and
`live` are available to every test.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from keepmind.desktop.process.daemon import Daemon
from keepmind.engine import tokens
from keepmind.engine.settings import defaults

TEST_SETTINGS = {"memory__embeddings__auto_download": False, "memory__embeddings__enabled": False}


@dataclass
class Live:
    daemon: Daemon
    # Set when the app asked its host to stop (the UI's Quit): the test stops it, as `serve` would.
    quit_requested: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return self.daemon.url

    @property
    def port(self) -> int:
        return self.daemon.server.port

    @property
    def token(self) -> str:
        return self.daemon.token

    @property
    def engine(self):
        return self.daemon.engine

    def client(self, token: str | None = "default", **headers) -> httpx.Client:
        """An HTTP client of /api/v1 with the local token (or `token`, or none when None)."""
        if token == "default":
            token = self.token
        if token is not None:
            headers.setdefault("Authorization", f"Bearer {token}")
        return httpx.Client(base_url=self.url + "/api/v1", headers=headers, timeout=30)

    def make_token(self, name: str, ceiling: str, boundaries=("*",)) -> str:
        created = self.engine.write(tokens.create, name, ceiling, list(boundaries), self.engine.now())
        return created.secret

    def stop(self) -> None:
        self.daemon.stop()


def start_live(home: Path, clock=None, *, start_workers: bool = False, **overrides) -> Live:
    settings = defaults().with_overrides(**{**TEST_SETTINGS, **overrides})
    quit_requested = threading.Event()
    daemon = Daemon(Path(home), port=0, settings=settings, clock=clock, threads=4, start_workers=start_workers,
                    on_shutdown_request=quit_requested.set)
    return Live(daemon.start(), quit_requested)


@pytest.fixture(scope="session", name="start_live")
def start_live_fixture():
    """`start_live(home, clock=None, **settings)` -> Live: a real server; call .stop() when done."""
    return start_live


@pytest.fixture(name="live")
def live_fixture(tmp_path, clock):
    server = start_live(tmp_path / "home", clock=clock)
    yield server
    server.stop()


@pytest.fixture(name="api")
def api_fixture(live):
    """An HTTP client of the live server's /api/v1 with the local token."""
    with live.client() as client:
        yield client
