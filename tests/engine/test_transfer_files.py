"""What export, import and a model upload write in the data dir is owner-only (folders 0700, files
0600) even under a umask of 022; once imported, an upload's files go and only what the import did
stays, and that is owner-only too."""

from __future__ import annotations

import json
import os
import stat
from contextlib import contextmanager
from pathlib import Path

import pytest

from keepmind.engine import open_engine
from keepmind.engine.exchange import AlreadyImported
from keepmind.engine.models import manifest as manifests
from keepmind.engine.settings import defaults
from support.files import zipped

FILES = ("model.onnx", "vocab.txt", "tokenizer.json")


@contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def wider_than_owner(root: Path) -> dict[str, str]:
    """`root` and everything under it that other users may read or enter, with its mode."""
    found = {}
    for path in [root, *sorted(root.rglob("*"))]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077:
            found[path.relative_to(root.parent).as_posix()] = oct(mode)
    return found


def test_an_export_an_import_preview_and_the_import_write_only_owner_only_files(make_engine, tmp_path):
    home = tmp_path / "home"
    with umask(0o022):
        eng = make_engine(home)
        eng.store(eng.open_session("personal", "work"), "Anna", "Anna lives in Lisbon.", anchor="Anna")
        folder = eng.export_folder()
        jsonl, _ = eng.export_file(folder, "jsonl")
        markdown, _ = eng.export_file(folder, "markdown")
        assert jsonl.is_file() and markdown.suffix == ".zip"
        assert wider_than_owner(home / "exports") == {}

        staging = eng.stage_import("workspace.zip", zipped({"ws/MEMORY.md": "- I like green tea.\n"}))
        preview = eng.import_staged(staging, audience="personal", boundary="notes", dry_run=True)
        assert preview["errors"] == [] and preview["preview"]["documents"] == 1
        assert wider_than_owner(home / "imports") == {}
        eng.import_staged(staging, audience="personal", boundary="notes", dry_run=False)
        assert wider_than_owner(home / "imports") == {}

    kept = home / "imports" / staging
    assert sorted(p.name for p in kept.iterdir()) == ["meta.json"]  # the upload's files are gone
    assert json.loads((kept / "meta.json").read_text())["result"]["imported"] == 1
    with pytest.raises(AlreadyImported, match="workspace.zip was imported already"):
        eng.import_staged(staging, audience="personal", boundary="notes", dry_run=False)


def test_a_model_upload_makes_its_folders_owner_only(tmp_path, tiny, clock):
    home = tmp_path / "home"
    man = tiny.install_tiny(tmp_path / "src", "tiny-embed")
    manifests.save_custom(home / "models", man)
    files = {n: (tmp_path / "src" / "tiny-embed" / n).read_bytes() for n in FILES}
    settings = defaults().with_overrides(memory__embeddings__auto_download=False)
    with umask(0o022), open_engine(home, settings=settings, clock=clock, start_workers=False) as eng:
        job = eng.upload_models([("tiny.zip", zipped({f"tiny/{n}": d for n, d in files.items()}))])
        done = eng.jobs.wait(job.id, 30)
        assert done.state == "done", done.error
        assert (home / "uploads").is_dir()
        assert wider_than_owner(home / "uploads") == {}
        assert wider_than_owner(home / "models" / "tiny-embed") == {}
