"""Fixtures for the models tests: the tiny-model builders and a fake Hugging Face hub."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest


def _helper(name: str):
    """Load a helper module beside this file (the suite uses --import-mode=importlib)."""
    key = f"keepmind_tests_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


@pytest.fixture(scope="session")
def tiny():
    return _helper("models_tiny")


@pytest.fixture
def hub(monkeypatch):
    """A fake hub on loopback; huggingface_hub is let online (the suite sets HF_HUB_OFFLINE=1)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    fake = _helper("models_fakehub").FakeHub().start()
    yield fake
    fake.stop()
