"""The PyInstaller build: a one-folder app without model files that, started with `serve` on a
fresh home, answers /api/v1/status (packaging/pyinstaller/build.sh, as a person would run it)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "packaging" / "pyinstaller" / "build.sh"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Path:
    pytest.importorskip("PyInstaller")
    dist = tmp_path_factory.mktemp("dist")
    work = tmp_path_factory.mktemp("work")
    started = time.monotonic()
    proc = subprocess.run(["bash", str(BUILD), str(dist)], env={**os.environ, "KEEPMIND_BUILD_DIR": str(work)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f"pyinstaller build: {time.monotonic() - started:.0f} s")
    return dist / "keepmind"


def test_the_built_app_has_its_data_and_no_model_files(app):
    assert (app / "keepmind").is_file() and (app / "keepmind-tray").is_file()
    files = [p.relative_to(app).as_posix() for p in app.rglob("*") if p.is_file()]
    assert not [f for f in files if f.endswith((".onnx", ".onnx_data"))]
    for needed in ("keepmind/icons/keepmind-healthy-22.png", "keepmind/engine/recall/lexical_gate.json",
                   "keepmind/engine/models/manifests/all-minilm-l6-v2.json", "keepmind/webui/templates/error.html"):
        assert any(f.endswith(needed) for f in files), needed


def test_the_built_app_serves_the_api_on_a_fresh_home(app, tmp_path):
    home = tmp_path / "fresh"
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.Popen([str(app / "keepmind"), "serve", "--home", str(home), "--port", "0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert "serving on http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        url = line.split("serving on ", 1)[1].split()[0]
        token = (home / "token").read_text().strip()
        answer = httpx.get(url + "/api/v1/status", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert answer.status_code == 200 and answer.json()["ok"] is True
        assert answer.json()["memory"]["status"] in ("healthy", "degraded")  # no models yet: degraded, says why
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == 0 and "keepmind stopped" in out
    assert not (home / "server.json").exists() and not (home / "keepmind.lock").exists()
