"""The write path's doctor checks: is the checkpoint queue keeping up, and is the LLM answering?

Read from what the database recorded (the queue, observer runs and checkpoint errors of the last
24 hours), so `keepmind doctor` in its own process sees what the running Keepmind saw.
"""

from __future__ import annotations

from ..checks import Check
from ..clock import DAY_MS
from ..db import one, scalar

BACKLOG_WARN = 25


def check_backlog(engine) -> Check:
    """More than 25 checkpoints waiting, or any dead letter, needs a person."""
    counts = engine.checkpoint_overview(limit=1)["counts"]
    pending = counts["pending"] + counts["leased"]
    dead = counts["dead"]
    if dead:
        return Check("Checkpoint backlog", "warning",
                     f"{dead} dead-lettered checkpoint{'s' if dead != 1 else ''} (curation gave up after 5 tries): "
                     "`keepmind checkpoints list --status dead` shows why; fix the cause (often the Curation "
                     "LLM below), then `keepmind checkpoints retry ID`")
    if pending > BACKLOG_WARN:
        return Check("Checkpoint backlog", "warning",
                     f"{pending} checkpoints waiting (more than {BACKLOG_WARN}): curation is falling behind; "
                     "check the Curation LLM below and the logs, and keep Keepmind running so the queue drains "
                     "(`keepmind checkpoints drain` curates it now)")
    return Check("Checkpoint backlog", "pass", f"{pending} pending, {counts['completed']} completed")


def check_llm(engine):
    settings = engine.settings
    writepath = engine.writepath
    if not settings["memory.llm.base_url"] or not settings["memory.llm.model"]:
        return Check("Curation LLM", "pass", "none configured: the rule-based extractor distils sessions and "
                                             "curation never merges (set memory.llm.base_url and memory.llm.model)")
    key_env = settings["memory.llm.api_key_env"]
    if key_env and writepath is not None and writepath.llm is not None and not writepath.llm.config.api_key:
        return Check("Curation LLM", "warning", f"memory.llm.api_key_env names {key_env}, but that environment "
                                                "variable is not set for Keepmind")
    since = engine.now() - DAY_MS
    with engine.db.snapshot() as conn:
        runs = scalar(conn, "SELECT COUNT(*) FROM observer_runs WHERE finished_at>=? AND decided_by LIKE 'model:%'",
                      (since,))
        failed = one(conn, "SELECT COUNT(*) AS n, MAX(finished_at) AS at FROM observer_runs"
                           " WHERE finished_at>=? AND status='failed'", (since,))
        last = one(conn, "SELECT error FROM observer_runs WHERE status='failed' ORDER BY finished_at DESC LIMIT 1")
        curator = scalar(conn, "SELECT COUNT(*) FROM memory_checkpoints WHERE updated_at>=? AND"
                               " last_error LIKE 'curator LLM%'", (since,))
    target = f"{settings['memory.llm.model']} at {settings['memory.llm.base_url']}"
    if failed["n"] or curator:
        error = (last or {}).get("error") or "see the checkpoints' last errors"
        return Check("Curation LLM", "warning",
                     f"{target}: {failed['n']} of {runs} observer calls and {curator} curation attempts failed in "
                     f"the last 24 h (last: {error[:200]}); check the server and memory.llm.timeout_seconds")
    return Check("Curation LLM", "pass", f"{target}: {runs} observer calls in the last 24 h, none failed")
