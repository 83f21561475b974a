"""The write path's doctor checks: is the checkpoint queue keeping up, and is the LLM answering?

Read from what the database recorded (the queue, observer runs and checkpoint errors of the last
24 hours), so `keepmind doctor` in its own process sees what the running Keepmind saw.
"""

from __future__ import annotations

import re

from ..checks import Check
from ..clock import DAY_MS
from ..db import one, rows, scalar
from .llm import http_remedy

BACKLOG_WARN = 25


def check_backlog(engine) -> Check:
    """More than 25 checkpoints waiting, or any dead letter, needs a person."""
    counts = engine.checkpoint_overview(limit=1)["counts"]
    pending = counts["pending"] + counts["leased"]
    dead = counts["dead"]
    if dead:
        with engine.db.snapshot() as conn:
            letters = rows(conn, "SELECT attempts, last_error FROM memory_checkpoints WHERE status='dead'")
        return Check("Checkpoint backlog", "warning",
                     f"{dead} dead-lettered checkpoint{'s' if dead != 1 else ''} ({why_dead(letters)}): "
                     "`keepmind checkpoints list --status dead` shows why; fix the cause (often the Curation "
                     "LLM below), then `keepmind checkpoints retry ID`")
    if pending > BACKLOG_WARN:
        return Check("Checkpoint backlog", "warning",
                     f"{pending} checkpoints waiting (more than {BACKLOG_WARN}): curation is falling behind; "
                     "check the Curation LLM below and the logs, and keep Keepmind running so the queue drains "
                     "(`keepmind checkpoints drain` curates it now)")
    return Check("Checkpoint backlog", "pass", f"{pending} pending, {counts['completed']} completed")


def why_dead(letters: list[dict]) -> str:
    """How the dead letters got there, with the tries each really took.

    A checkpoint is dead-lettered either when its last allowed attempt failed (the error then says
    "gave up after N attempts", from checkpoints.fail and reclaim) or at once, on any attempt, when
    the failure was permanent (a malformed or scrubbed payload, an invalid proposal, a provider
    that refuses the requests): "after 5 tries" is true only of the first kind."""
    exhausted: list[int] = []
    refused: list[int] = []
    for letter in letters:
        gave_up = "gave up after" in (letter["last_error"] or "")
        (exhausted if gave_up else refused).append(int(letter["attempts"] or 0))
    parts = [(exhausted, "curation gave up after"), (refused, "refused as a permanent failure after")]
    said = [(len(tries), f"{words} {_tries(tries)}") for tries, words in parts if tries]
    if len(said) == 1:
        return said[0][1]
    return "; ".join(f"{n}: {words}" for n, words in said)


def _tries(attempts: list[int]) -> str:
    low, high = min(attempts), max(attempts)
    if low == high:
        return f"{low} {'try' if low == 1 else 'tries'}"
    return f"{low} to {high} tries"


def check_llm(engine):
    settings = engine.settings
    writepath = engine.writepath
    if not settings["memory.llm.base_url"] or not settings["memory.llm.model"]:
        saved = _saved_llm(engine)
        if saved:  # a walk saved one on the Settings page and read "none configured" here
            return Check("Curation LLM", "warning", f"{saved} is saved in keepmind.json and is used from the next "
                                                    "start: restart Keepmind (tray: Quit, then start it); until "
                                                    "then the rule-based extractor distils sessions")
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
    # what status says of the provider now (failing in a row), which the tables may not hold: a
    # curation call that failed and fell back to the rules leaves no error on its checkpoint
    failing = writepath.llm.status_reasons() if writepath is not None and writepath.llm is not None else []
    if failing and not (failed["n"] or curator):
        return Check("Curation LLM", "warning", f"{target}: {failing[0]}; test the connection on the Settings "
                                                "page, or check memory.llm.base_url, memory.llm.model and the key")
    if failed["n"] or curator:
        error = (last or {}).get("error") or "see the checkpoints' last errors"
        # "0 of 0 observer calls and 2 curation proposals failed" beside the Overview's "6 in a row": say
        # what each counts, and no observer count when no observer run failed
        said = [f"{n} {what}{'' if n == 1 else 's'}" for n, what in (
            (failed["n"], "observer run"), (curator, "curation proposal")) if n]
        asked = max(runs, failed["n"])
        tried = f" (of {asked} observer run{'' if asked == 1 else 's'} that asked the model)" if failed["n"] else ""
        return Check("Curation LLM", "warning",
                     f"{target}: in the last 24 h {' and '.join(said)} failed{tried}; a proposal can take several "
                     f"calls (last error: {error[:200]}); {_remedy(error)}")
    return Check("Curation LLM", "pass", f"{target}: {runs} observer calls in the last 24 h, none failed")


def _saved_llm(engine) -> str | None:
    """The curation LLM keepmind.json names when the running process has none ("MODEL at URL")."""
    from ..errors import SettingsError
    from ..settings import read_raw, validate

    path = getattr(engine, "settings_path", None)
    try:
        saved = validate(read_raw(path)) if path is not None else None
    except (SettingsError, OSError, ValueError):
        return None
    if saved is None or not saved["memory.llm.base_url"] or not saved["memory.llm.model"]:
        return None
    return f"{saved['memory.llm.model']} at {saved['memory.llm.base_url']}"


def _remedy(error: str) -> str:
    """What to check for the last failure: the provider's answer says it (llm.http_remedy), and
    without one (no reply at all) the server or its wait."""
    if http := re.search(r"HTTP (\d{3})", error or ""):
        return http_remedy(int(http.group(1)))
    return "check the server and memory.llm.timeout_seconds"
