"""Doctor (`/doctor`): every check with its state and what to do, run again on demand; a check
that fails links to the page that fixes it.

Checks come from Engine.doctor() (each subsystem adds its own); this page only renders them, and
`FIXES` maps a check's name to the page for it (a check it does not know gets no link). The
checks read the whole database, so the page shows the last run when it is recent (the tray runs
them too) and "Run the checks again" (a POST) reruns them.
"""

from __future__ import annotations

from flask import Blueprint

from ..context import engine
from ..security import require_owner
from .render import page

bp = Blueprint("doctor", __name__)
# Check name -> (the page that fixes it, what the link says).
FIXES = {
    "Checkpoint backlog": ("/checkpoints", "Open the backlog"),
    "Curation LLM": ("/settings#group-curation-llm", "Open the LLM settings"),
    "Embeddings": ("/models", "Open the models"),
    "Model files": ("/models", "Open the models"),
    "Relevance gate": ("/models", "Open the models"),
    "Settings": ("/settings", "Open the settings"),
    "Database": ("/transfer", "Export what you have"),
}
ORDER = {"error": 0, "warning": 1, "pass": 2}
FRESH_MS = 5 * 60_000  # a run younger than this is shown as it is


def _report(checked_at: int, checks: list):
    checks = sorted(checks, key=lambda c: ORDER.get(c.level, 1))
    return page("doctor.html", "_doctor.html", checks=checks, fixes=FIXES, settings_problem=engine().settings_problem(),
                failing=sum(1 for c in checks if c.level != "pass"), checked_at=checked_at)


@bp.get("/doctor")
def doctor():
    require_owner()
    eng = engine()
    last = eng.last_doctor()
    if last is None or eng.now() - last[0] > FRESH_MS:
        return _report(eng.now(), eng.doctor())
    return _report(*last)


@bp.post("/doctor")
def run_again():
    require_owner()
    eng = engine()
    return _report(eng.now(), eng.doctor())
