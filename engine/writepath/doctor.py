"""The write path's doctor check: is the configured LLM provider answering?

Read from what the database recorded (observer runs and checkpoint errors of the last 24 hours),
so `keepmind doctor` in its own process sees what the running Keepmind saw.
"""

from __future__ import annotations

from ..checks import Check
from ..clock import DAY_MS
from ..db import one, scalar


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
