"""Verification and installation of model files: size first, then SHA-256, then an atomic rename.

A file that fails its check is never loaded and never left in the models dir: installs stage into
a hidden temp file beside the target and rename only after every file of the model has passed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..private import make_private_dirs
from .manifest import Manifest, ModelError, ModelFile

CHUNK = 1 << 20


@dataclass(frozen=True)
class Verification:
    model_id: str
    ok: bool
    problems: tuple[str, ...] = ()
    missing: bool = False  # nothing of the model is installed (as opposed to corrupt)

    @property
    def state(self) -> str:
        return "verified" if self.ok else ("missing" if self.missing else "corrupt")


def sha256_stream(fh: BinaryIO) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: fh.read(CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return sha256_stream(fh)


class HashCache:
    """SHA-256 of files remembered by (path, size, mtime): a model file is hashed again only after
    it changed, so doctor (which the tray runs on an interval) stays fast with 100 MB models."""

    def __init__(self):
        self._known: dict[tuple[str, int, int], str] = {}
        self._lock = threading.Lock()
        self.hashed = 0  # files actually read (what the cache saves is visible in tests)

    def sha256(self, path: Path) -> str:
        st = Path(path).stat()
        key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
        with self._lock:
            found = self._known.get(key)
        if found is not None:
            return found
        digest = sha256_file(path)
        with self._lock:
            self._known[key] = digest
            self.hashed += 1
        return digest


def check_file(path: Path, spec: ModelFile, label: str | None = None, hashes: HashCache | None = None) -> str | None:
    """None when `path` matches the spec, else a sentence naming the file and what differs."""
    label = label or spec.name
    path = Path(path)
    if not path.is_file():
        return f"{label} is missing"
    size = path.stat().st_size
    if spec.size is not None and size != spec.size:
        return f"{label} has {size:,} bytes, expected {spec.size:,}"
    digest = hashes.sha256(path) if hashes is not None else sha256_file(path)
    if digest != spec.sha256:
        return f"{label} has sha256 {digest[:16]}…, expected {spec.sha256[:16]}…"
    return None


def model_dir(models_dir: Path, model_id: str) -> Path:
    return Path(models_dir) / model_id


def verify_installed(models_dir: Path, manifest: Manifest, hashes: HashCache | None = None) -> Verification:
    """Check every file of an installed model against its manifest (`hashes`: remembered digests)."""
    folder = model_dir(models_dir, manifest.id)
    present = [f for f in manifest.files if (folder / f.name).is_file()]
    if not present:
        return Verification(manifest.id, False, (f"{manifest.id} is not installed",), missing=True)
    problems = tuple(p for f in manifest.files if (p := check_file(folder / f.name, f, hashes=hashes)) is not None)
    return Verification(manifest.id, not problems, problems)


def install_files(models_dir: Path, manifest: Manifest, sources: dict[str, Path], *,
                  origin: str = "", labels: dict[str, str] | None = None, move: bool = False) -> Path:
    """Copy `sources` (installed name -> file) into models/<id>/ once every one has verified.

    Raises ModelError naming the first file that fails; nothing is left behind in that case.
    `move=True` moves the sources (downloads in a staging dir) instead of copying them.
    """
    labels = labels or {}
    folder = model_dir(models_dir, manifest.id)
    make_private_dirs(folder)  # models/ too, when this is its first model: owner-only from the start
    remove_strays(folder)
    staged: list[tuple[Path, Path]] = []
    try:
        for spec in manifest.files:
            src = sources.get(spec.name)
            label = labels.get(spec.name, spec.name)
            if src is None:
                raise ModelError(f"{manifest.id}: {label} is missing{' from ' + origin if origin else ''}")
            tmp = folder / f".{spec.name}.tmp-{uuid.uuid4().hex[:8]}"
            staged.append((tmp, folder / spec.name))
            if move:
                shutil.move(str(src), tmp)
            else:
                shutil.copyfile(src, tmp)
            os.chmod(tmp, 0o600)  # the data dir's files are owner-only
            problem = check_file(tmp, spec, label)
            if problem:
                raise ModelError(f"{problem}{' (in ' + origin + ')' if origin else ''}: "
                                 f"it does not match the {manifest.id} manifest and was not installed")
        for tmp, final in staged:
            os.replace(tmp, final)
        staged.clear()
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        if not any(folder.iterdir()):
            folder.rmdir()
    return folder


def remove_strays(folder: Path, older_than_s: float = 3600) -> None:
    """Delete temp files a killed install left behind (never a verified file, never a fresh one
    that another process may still be writing)."""
    cutoff = time.time() - older_than_s
    if folder.is_dir():
        for p in folder.glob(".*.tmp-*"):
            try:
                if p.stat().st_mtime < cutoff:
                    p.unlink()
            except OSError:
                pass
