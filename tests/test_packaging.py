"""The built wheel installs one top-level package, `keepmind`, and runs from outside the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (built,) = out.glob("keepmind-*.whl")
    return built


def test_the_wheel_installs_only_the_keepmind_namespace(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"keepmind"}
    for folder in ("engine", "webui", "desktop", "icons"):
        assert f"keepmind/{folder}/__init__.py" in names
    # every package folder of the checkout is in the wheel (pyproject lists them by hand)
    for folder in ("engine", "webui", "desktop"):
        for init in (ROOT / folder).rglob("__init__.py"):
            assert f"keepmind/{init.relative_to(ROOT).as_posix()}" in names, f"{init} is not packaged"
    assert "keepmind/engine/models/manifests/all-minilm-l6-v2.json" in names
    assert "keepmind/engine/recall/lexical_gate.json" in names
    assert "keepmind/icons/keepmind-healthy-22.png" in names
    assert "keepmind/webui/templates/error.html" in names


def test_the_installed_wheel_runs_as_a_command_and_as_python_m(wheel, tmp_path):
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(target), "KEEPMIND_HOME": str(tmp_path / "home")}
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    where = subprocess.run([sys.executable, "-c", "import keepmind.engine as e; print(e.__file__)"],
                           cwd=outside, env=env, capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(target)  # the installed copy, not the checkout
    for cmd in ([sys.executable, "-m", "keepmind", "--help"], [str(target / "bin" / "keepmind"), "--help"]):
        run = subprocess.run(cmd, cwd=outside, env=env, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert "usage: keepmind" in run.stdout and "serve" in run.stdout
