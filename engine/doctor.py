"""Doctor: checks a person can act on (database, data dir permissions, checkpoint backlog, models,
embeddings)."""

from __future__ import annotations

from .checks import LEVELS, Check
from .db import scalar
from .private import check_privacy
from .recall.gate import lexical_calibration

BACKLOG_WARN = 25


def check_database(engine) -> Check:
    with engine.db.snapshot() as conn:
        result = scalar(conn, "PRAGMA quick_check")
        pages = scalar(conn, "PRAGMA page_count") * scalar(conn, "PRAGMA page_size")
    size_mb = pages / 1_048_576
    if result != "ok":
        return Check("Database", "error", f"integrity check failed: {result}; restore from an export")
    return Check("Database", "pass", f"integrity ok, {size_mb:.1f} MB")


def check_backlog(engine) -> Check:
    overview = engine.checkpoint_overview(limit=1)
    counts = overview["counts"]
    pending = counts["pending"] + counts["leased"]
    dead = counts["dead"]
    if pending > BACKLOG_WARN:
        return Check("Checkpoint backlog", "warning",
                     f"{pending} checkpoints waiting (more than {BACKLOG_WARN}): curation is falling behind; "
                     "see `keepmind status` and the logs")
    if dead:
        return Check("Checkpoint backlog", "warning",
                     f"{dead} dead-lettered checkpoints: inspect them and retry with `keepmind checkpoints retry`")
    return Check("Checkpoint backlog", "pass", f"{pending} pending, {counts['completed']} completed")


def check_embeddings(engine) -> Check:
    if not engine.settings["memory.embeddings.enabled"]:
        return Check("Embeddings", "pass", "disabled by settings: recall is lexical-only")
    info = engine.models.details()["embeddings"]
    if info["model_id"] is None:
        level = "warning" if engine.settings["memory.embeddings.auto_download"] else "error"
        return Check("Embeddings", level, f"no embedder is ready ({info['reason']}): recall is lexical-only")
    parts = [f"model {info['model_id']}", f"{info['embedded_current']}/{info['live']} memories embedded"
             f" at their current text", f"queryPrefix={info['query_prefix']}"]
    if info["floor"] is None:
        return Check("Embeddings", "warning", ", ".join(parts) + ": the model is uncalibrated, so recall "
                     "stays lexical; run `keepmind eval calibrate` or set memory.recall.min_cosine")
    parts.append(f"floor={info['floor']:.3f} (source={info['floor_source']})")
    if info["other_model_items"]:
        parts.append(f"{info['other_model_items']} items also have vectors of other models (run "
                     "`keepmind memory backfill-embeddings --force` after switching models)")
    if info["embedded_current"] < info["live"]:
        return Check("Embeddings", "warning", ", ".join(parts) + ": gap repair has not caught up "
                     "(`keepmind memory backfill-embeddings`)")
    return Check("Embeddings", "pass", ", ".join(parts))


def check_gate(engine) -> Check:
    if engine.settings["memory.recall.gate.enabled"] is False:
        return Check("Relevance gate", "pass", "off (setting): the floor's output is injected")
    info = engine.models.details()["gate"]
    lexical = ("without a query vector the lexical gate decides" if lexical_calibration()
               else "the lexical gate's calibration is missing: recall without a query vector injects the "
                    "floor's output")
    if info["model_id"] is not None:
        return Check("Relevance gate", "pass", f"{info['model_id']}, threshold {info['threshold']:.3f} "
                     f"(source={info['threshold_source']}); {lexical}")
    if engine.models.offline_gate_ready():
        return Check("Relevance gate", "pass",
                     f"no cross-encoder ({info['reason']}); the offline feature gate calibrated for "
                     f"{engine.models.embedder().model_id} decides; {lexical}")
    level = "pass" if not engine.models.embeddings_enabled and lexical_calibration() else "warning"
    why = ("embeddings are off" if not engine.models.embeddings_enabled
           else "no cross-encoder and no calibrated embedder loaded (see Embeddings)")
    return Check("Relevance gate", level, f"{why}: recall is lexical; {lexical}")


def run_checks(engine) -> list[Check]:
    checks = [check_database(engine), check_privacy(engine), check_backlog(engine), check_embeddings(engine),
              check_gate(engine)]
    for extra in engine.doctor_checks:
        checks.append(extra(engine))
    return checks


__all__ = ["BACKLOG_WARN", "Check", "LEVELS", "run_checks"]
