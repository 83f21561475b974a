"""Shared fixtures: real SQLite files in tmp_path, a fake clock, engines and sessions.

This file is a composition root: it may set environment variables for the code under test.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from keepmind.engine import open_engine
from keepmind.engine.clock import FakeClock
from keepmind.engine.settings import defaults


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


def _load_live():
    """tests/webui/live.py (a live server on a loopback port), loaded by path once: the suite uses
    --import-mode=importlib and the folder name `webui` would shadow the real package."""
    name = "keepmind_tests_live"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "webui" / "live.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


start_live, live = _load_live().start_live_fixture, _load_live().live_fixture
