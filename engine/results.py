"""What the engine's write verbs return: values, not exceptions, for the expected outcomes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoreResult:
    id: str | None
    action: str  # "created" | "duplicate" | "tombstoned" | "queued" | "blocked" | ...
    reason: str = ""
    checkpoint_id: str | None = None


@dataclass(frozen=True)
class UpdateResult:
    id: str
    action: str  # "replaced" | "rewritten" | "retitled" | "superseded" | "deleted" | "unchanged" | "blocked"
    new_id: str | None = None
    replacements: int = 0
    revision: int | None = None
    reason: str = ""


__all__ = ["StoreResult", "UpdateResult"]
