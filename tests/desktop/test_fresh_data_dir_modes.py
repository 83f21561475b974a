"""A data dir Keepmind's own commands make is owner-only from the start: with the usual umask
(022), `keepmind models install-offline` on a new data dir and then `keepmind serve` leave nothing
for the start-up repair to fix, so the log never opens with `data_dir_modes_repaired` and doctor
has nothing to warn about."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from keepmind.desktop.cli import main as cli
from keepmind.desktop.process.logs import remove_file_log, setup_file_log
from keepmind.engine.models import manifest as manifests
from keepmind.engine.models.offline import OFFLINE_MODEL
from support.files import healthy_client


def modes(home: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(home.stat().st_mode)}
    for path in sorted(home.rglob("*")):
        out[path.relative_to(home).as_posix()] = stat.S_IMODE(path.lstat().st_mode)
    return out


def wide(home: Path) -> dict[str, str]:
    return {name: oct(mode) for name, mode in modes(home).items() if mode & 0o077}


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture
def wheels(tmp_path, _offline_pack) -> Path:
    """The offline pack's two PyPI wheels, rebuilt from the verified files (no network): what
    `install-offline --wheels DIR` reads."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    for spec in manifests.get(None, OFFLINE_MODEL).wheels:
        name, version = spec["requirement"].split("==")
        wheel = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            for member, installed in spec["members"].items():
                zf.write(_offline_pack / installed, member)
    return folder


def test_install_offline_then_serve_make_a_data_dir_with_nothing_to_repair(tmp_path, wheels, umask_022, capsys):
    home = tmp_path / "new-home"
    assert cli(["models", "install-offline", "--home", str(home), "--wheels", str(wheels)]) == 0
    assert "installed" in capsys.readouterr().out
    assert wide(home) == {}, "install-offline left folders or files readable by others"
    assert modes(home)["models"] == 0o700 and modes(home)[f"models/{OFFLINE_MODEL}"] == 0o700

    server = subprocess.Popen([sys.executable, "-m", "keepmind", "serve", "--home", str(home), "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log = home / "logs" / "keepmind.log"
    try:
        deadline = time.monotonic() + 60
        client = healthy_client(home, server)
        assert client is not None, "keepmind serve did not come up"
        client.close()
        while "keepmind_serving" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
            time.sleep(0.1)
        found = wide(home)
    finally:
        server.terminate()
        out = server.communicate(timeout=60)[0].decode(errors="replace")
    text = log.read_text()
    assert "keepmind_serving" in text
    assert "data_dir_modes_repaired" not in text + out  # nothing was wider than owner-only at the start
    assert found == {}, "serve left folders or files readable by others"
    assert modes(home)["logs"] == 0o700 and modes(home)["logs/keepmind.log"] == 0o600
    assert cli(["doctor", "--home", str(home), "--json"]) in (0, 1)
    [check] = [c for c in json.loads(capsys.readouterr().out) if c["name"] == "Data dir permissions"]
    assert check["level"] == "pass", check["message"]


def test_every_log_file_is_owner_only_also_after_it_rotates(tmp_path, umask_022):
    import logging

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    handler = setup_file_log(home, max_bytes=200, backups=2)
    try:
        for i in range(20):
            logging.getLogger("keepmind.test").info("line %d of a log that rotates", i)
    finally:
        remove_file_log(handler)
    logs = sorted(p.name for p in (home / "logs").iterdir())
    assert logs == ["keepmind.log", "keepmind.log.1", "keepmind.log.2"]
    assert wide(home) == {}
