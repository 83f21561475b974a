"""Download a model's files from the Hugging Face hub (huggingface_hub 2.x) at the pinned revision.

Each file goes into a private staging folder, is checked for size and SHA-256 and only then
renamed into models/<id>/; on any failure the staging folder is removed, so nothing half-written
is left behind and the next try starts clean. The endpoint is huggingface_hub's (it honours
HF_ENDPOINT); a metadata request without retries goes first so an unreachable hub fails fast.
"""

from __future__ import annotations

import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..private import make_private_dirs
from .manifest import Manifest, ModelError
from .verify import check_file, install_files, model_dir, verify_installed

METADATA_TIMEOUT_S = 10.0

ProgressFn = Callable[[str, int, int | None], None]  # (file name, bytes done, total or None)


@dataclass(frozen=True)
class DownloadResult:
    model_id: str
    action: str  # "already-installed" | "downloaded"
    folder: Path


def _progress_class(progress: ProgressFn | None, name: str):
    """A tqdm-shaped class huggingface_hub drives; it forwards byte counts to `progress`."""

    class Progress:
        def __init__(self, *args, total=None, initial=0, **kwargs):
            self.total, self.n = total, initial or 0
            self._emit()

        def _emit(self):
            if progress is not None:
                progress(name, self.n, self.total)

        def update(self, n=1):
            self.n += n or 0
            self._emit()

        def close(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    return Progress


def download_model(models_dir: Path, man: Manifest, *, progress: ProgressFn | None = None,
                   endpoint: str | None = None, timeout_s: float = METADATA_TIMEOUT_S) -> DownloadResult:
    """Fetch, verify and install every file of `man` that is not already installed and verified."""
    models_dir = Path(models_dir)
    folder = model_dir(models_dir, man.id)
    if verify_installed(models_dir, man).ok:
        return DownloadResult(man.id, "already-installed", folder)
    hub = man.hub
    if not hub:
        raise ModelError(f"{man.id} is not on the Hugging Face hub: install it with "
                         "`keepmind models install-offline` or `keepmind models import PATH`")
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    repo, revision = hub["repo"], hub["revision"]
    _remove_stale_staging(models_dir / ".downloads")
    staging = make_private_dirs(models_dir / ".downloads" / f"{man.id}-{uuid.uuid4().hex[:8]}")  # models/ too
    sources: dict[str, Path] = {}
    try:
        for spec in man.files:
            if check_file(folder / spec.name, spec) is None:
                sources[spec.name] = folder / spec.name  # already good: keep it
                continue
            path = spec.path or spec.name
            try:
                url = hf_hub_url(repo, path, revision=revision, endpoint=endpoint)
                meta = get_hf_file_metadata(url, timeout=timeout_s, endpoint=endpoint)
            except Exception as exc:  # noqa: BLE001 - hub, network and offline-mode errors alike
                if "NotFound" in exc.__class__.__name__:
                    raise ModelError(f"the hub has no {path} in {repo} at {revision[:12]} ({_short(exc)}); "
                                     "the manifest or the endpoint (HF_ENDPOINT) is wrong") from None
                offline = (", or on machines without hub access run `keepmind models install-offline`"
                           if man.role == "embedder" else
                           ", or download it where the hub is reachable and bring its folder here with "
                           "`keepmind models import FOLDER`")
                raise ModelError(f"could not reach the Hugging Face hub for {man.id} ({_short(exc)}); "
                                 f"check the connection (or HF_ENDPOINT){offline}") from None
            if meta.commit_hash and meta.commit_hash != revision:
                raise ModelError(f"the hub answered commit {meta.commit_hash[:12]} for {repo} instead of the "
                                 f"pinned {revision[:12]}; refusing to download {path}")
            if meta.size is not None and spec.size is not None and meta.size != spec.size:
                raise ModelError(f"{path} on the hub has {meta.size:,} bytes, the {man.id} manifest expects "
                                 f"{spec.size:,}; refusing to download it")
            try:
                got = hf_hub_download(repo, path, revision=revision, local_dir=staging, endpoint=endpoint,
                                      etag_timeout=timeout_s, tqdm_class=_progress_class(progress, spec.name))
            except Exception as exc:  # noqa: BLE001
                raise ModelError(f"downloading {path} for {man.id} failed ({_short(exc)}); "
                                 "run the command again to retry") from None
            sources[spec.name] = Path(got)
        installed = install_files(models_dir, man, sources, origin=f"the download from {repo}",
                                  move=False)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        parent = models_dir / ".downloads"
        if parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
    return DownloadResult(man.id, "downloaded", installed)


def _remove_stale_staging(parent: Path, older_than_s: float = 6 * 3600) -> None:
    """Staging folders of a process killed mid-download (a live one is younger than this)."""
    if not parent.is_dir():
        return
    cutoff = time.time() - older_than_s
    for entry in parent.iterdir():
        try:
            if entry.is_dir() and entry.stat().st_mtime < cutoff:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            pass


# What a network failure means, for the ones people meet (the library's class name says little)
_NETWORK_SAID = (("name or service not known", "the host name was not found"),
                 ("temporary failure in name resolution", "the host name could not be looked up"),
                 ("nodename nor servname", "the host name was not found"),
                 ("connection refused", "the connection was refused"),
                 ("timed out", "it timed out"), ("timeout", "it timed out"),
                 ("network is unreachable", "the network is unreachable"))


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    lowered = f"{exc.__class__.__name__} {text}".lower()
    for found, said in _NETWORK_SAID:
        if found in lowered:
            return said
    return f"{exc.__class__.__name__}: {text[:200]}"
