"""Shared fixtures: real SQLite files in tmp_path, a fake clock, engines and sessions.

This file is a composition root: it may set environment variables for the code under test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from keepmind.engine import open_engine
from keepmind.engine.clock import FakeClock
from keepmind.engine.settings import defaults

TEST_CACHE = Path(__file__).resolve().parents[1] / ".cache" / "test-cache"

# `live` and `start_live`: a real server on a free loopback port (tests/support/live.py).
pytest_plugins = ["support.live"]


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """No test ever touches the real user data dir."""
    monkeypatch.setenv("KEEPMIND_HOME", str(tmp_path_factory.mktemp("keepmind-home")))
    # Prepared model graphs (engine/models/prepare.py) are derived files: one cache for the whole run,
    # kept between runs, never the user's own.
    monkeypatch.setenv("KEEPMIND_CACHE_DIR", str(TEST_CACHE))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def make_engine(tmp_path, clock):
    """`make_engine(home=None, *, start_workers=False, **settings)` -> an open Engine on a real
    SQLite file, closed at teardown; settings are overrides like memory__enabled=False."""
    opened = []

    def make(home=None, *, start_workers=False, llm_api_key=None, **overrides):
        home = Path(home) if home is not None else tmp_path / f"home-{len(opened)}"
        eng = open_engine(home, settings=defaults().with_overrides(**overrides), clock=clock,
                          start_workers=start_workers, llm_api_key=llm_api_key)
        opened.append(eng)
        return eng

    yield make
    for eng in reversed(opened):
        eng.close()


@pytest.fixture
def engine(home, make_engine):
    return make_engine(home)


@pytest.fixture
def app(engine):
    """The Flask app serving `engine`, as if on 127.0.0.1:8765 (no socket: Flask's test client)."""
    from keepmind.webui.app import create_app

    return create_app(engine, {"port": 8765})


@pytest.fixture
def client(app):
    """Flask's test client, sending the Host header the server's allowlist expects (127.0.0.1:8765)."""
    from flask.testing import FlaskClient

    class LoopbackClient(FlaskClient):
        def open(self, *args, **kwargs):
            if not (args and not isinstance(args[0], str)):  # an EnvironBuilder or environ carries its own host
                kwargs.setdefault("base_url", "http://127.0.0.1:8765")
            return super().open(*args, **kwargs)

    app.test_client_class = LoopbackClient
    with app.test_client() as c:
        yield c


@pytest.fixture
def personal(engine):
    return engine.open_session("personal", "work")


@pytest.fixture
def team(engine):
    return engine.open_session("team", "work")


@pytest.fixture(scope="session")
def tiny():
    """Builders of real ONNX models small enough to make in a test (tests/support/tiny_models.py)."""
    from support import tiny_models

    return tiny_models


@pytest.fixture
def hub(monkeypatch):
    """A fake Hugging Face hub on loopback; huggingface_hub is let online (the suite sets
    HF_HUB_OFFLINE=1)."""
    from huggingface_hub import constants

    from support import fake_hub

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    fake = fake_hub.FakeHub().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def _offline_pack() -> Path:
    """The verified all-minilm-l6-v2 folder installed by `./dev test` (models install-offline)."""
    from keepmind.engine.models.manifest import get
    from keepmind.engine.models.offline import OFFLINE_MODEL
    from keepmind.engine.models.verify import verify_installed

    root = Path(os.environ.get("KEEPMIND_TEST_MODELS")
                or Path(__file__).resolve().parents[1] / ".cache" / "test-models")
    check = verify_installed(root / "models", get(None, OFFLINE_MODEL))
    if not check.ok:
        why = (f"the offline model pack is not installed in {root} ({'; '.join(check.problems)}): "
               f"run `keepmind models install-offline --home {root}` (./dev test does)")
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return root / "models" / OFFLINE_MODEL


@pytest.fixture
def offline_models_home(tmp_path, _offline_pack) -> Path:
    """A fresh data dir whose models/ holds the verified offline embedder (all-MiniLM-L6-v2 int8).

    The pack is linked, not copied; open_engine(offline_models_home, ...) gets an empty database.
    """
    home = tmp_path / "offline-home"
    (home / "models").mkdir(parents=True)
    (home / "models" / _offline_pack.name).symlink_to(_offline_pack, target_is_directory=True)
    return home


