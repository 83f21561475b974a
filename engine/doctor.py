"""Doctor: checks a person can act on (checkpoint backlog, models, embeddings, database)."""

from __future__ import annotations

from dataclasses import dataclass

from .db import scalar

BACKLOG_WARN = 25
LEVELS = ("pass", "warning", "error")


@dataclass(frozen=True)
class Check:
    name: str
    level: str  # pass | warning | error
    message: str

    def as_dict(self) -> dict:
        return {"name": self.name, "level": self.level, "message": self.message}


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
    models = getattr(engine, "models", None)
    if not engine.settings["memory.embeddings.enabled"]:
        return Check("Embeddings", "pass", "disabled by settings: recall is lexical-only")
    embedder = models.embedder() if models is not None else None
    if embedder is None:
        reasons = "; ".join(models.status_reasons()) if models is not None else "no model runtime"
        return Check("Embeddings", "warning", f"no embedder is ready ({reasons}): recall is lexical-only")
    with engine.db.snapshot() as conn:
        total = scalar(conn, "SELECT COUNT(*) FROM memory_documents WHERE deleted_at IS NULL") + scalar(
            conn, "SELECT COUNT(*) FROM memory_records r WHERE is_tombstone=0 AND NOT EXISTS"
                  " (SELECT 1 FROM memory_records s WHERE s.supersedes_record_id=r.record_id)")
        current = scalar(conn, "SELECT COUNT(*) FROM memory_embeddings WHERE model_id=?", (embedder.model_id,))
        other = scalar(conn, "SELECT COUNT(DISTINCT item_id) FROM memory_embeddings WHERE model_id != ?",
                       (embedder.model_id,))
    parts = [f"model {embedder.model_id}", f"{current}/{total} memories embedded"]
    if embedder.floor is None:
        return Check("Embeddings", "warning", ", ".join(parts) + ": the model is uncalibrated, so recall "
                     "stays lexical; run `keepmind eval calibrate` or set memory.recall.min_cosine")
    parts.append(f"floor={embedder.floor:.3f} (source={embedder.floor_source})")
    if other:
        parts.append(f"{other} items also have vectors of other models (run "
                     "`keepmind memory backfill-embeddings --force` after switching models)")
    if current < total:
        return Check("Embeddings", "warning", ", ".join(parts) + ": gap repair has not caught up")
    return Check("Embeddings", "pass", ", ".join(parts))


def run_checks(engine) -> list[Check]:
    checks = [check_database(engine), check_backlog(engine), check_embeddings(engine)]
    for extra in getattr(engine, "doctor_checks", []):
        checks.append(extra(engine))
    return checks
