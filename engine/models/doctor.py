"""The models' doctor checks: are memories embedded (by one model), and do the model files verify?"""

from __future__ import annotations

from ..checks import Check
from . import manifest as manifests
from .offline import OFFLINE_MODEL
from .verify import model_dir

COVERAGE_WARN = 0.95  # below this share of live memories embedded, vector recall misses memories


def check_embeddings(engine) -> Check:
    """An embedder is ready and calibrated, covers 95% of live memories, and only its vectors exist."""
    if not engine.settings["memory.embeddings.enabled"]:
        return Check("Embeddings", "pass", "disabled by settings: recall is lexical-only")
    info = engine.models.details()["embeddings"]
    if info["model_id"] is None:
        level = "warning" if engine.settings["memory.embeddings.auto_download"] else "error"
        return Check("Embeddings", level, f"no embedder is ready ({info['reason']}): recall is lexical-only")
    live, current = info["live"], info["embedded_current"]
    parts = [f"model {info['model_id']}", f"{current}/{live} memories embedded at their current text",
             f"queryPrefix={info['query_prefix']}"]
    if info["floor"] is None:
        return Check("Embeddings", "warning", ", ".join(parts) + ": the model is uncalibrated, so recall "
                     "stays lexical; run `keepmind recall calibrate` or set memory.recall.min_cosine")
    parts.append(f"floor={info['floor']:.3f} (source={info['floor_source']})")
    if info["other_model_items"]:
        return Check("Embeddings", "warning", ", ".join(parts) + f": {info['other_model_items']} memories also "
                     "have vectors of another model (the model was switched); run "
                     "`keepmind memory backfill-embeddings --force` so every memory has one model's vector")
    if live and current / live < COVERAGE_WARN:
        return Check("Embeddings", "warning", ", ".join(parts) + f": only {current / live:.0%} are embedded "
                     f"(under {COVERAGE_WARN:.0%}), so vector recall misses the rest; gap repair runs in the "
                     "background while Keepmind runs, or run `keepmind memory backfill-embeddings` now")
    return Check("Embeddings", "pass", ", ".join(parts))


def check_model_files(engine) -> Check:
    """Every installed model's files match its manifest (size and SHA-256); digests are cached by
    size and mtime, so only a changed file is read again."""
    runtime = engine.models
    installed = [m for m in manifests.all_ids(runtime.models_dir) if model_dir(runtime.models_dir, m).is_dir()]
    if not installed:
        return Check("Model files", "pass", f"no model installed in {runtime.models_dir}")
    failed = [(m, check) for m in installed if not (check := runtime.verify(m)).ok and not check.missing]
    if failed:
        model_id, check = failed[0]
        how = ("`keepmind models install-offline`" if model_id == OFFLINE_MODEL
               else f"`keepmind models download {model_id}` (or `keepmind models import PATH` with the files)")
        others = f" (and {len(failed) - 1} more model{'s' if len(failed) > 2 else ''})" if len(failed) > 1 else ""
        return Check("Model files", "error",
                     f"{model_id} fails verification: {'; '.join(check.problems)[:300]}{others}; a file that fails "
                     f"its check is never loaded: reinstall it with {how}")
    return Check("Model files", "pass", f"{len(installed)} installed, verified: {', '.join(installed)}")


__all__ = ["COVERAGE_WARN", "check_embeddings", "check_model_files"]
