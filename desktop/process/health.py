"""The desktop's own doctor check: does the Keepmind server answer?

The engine's checks cannot see this (the engine does not know it is served); the tray runs it on
its own server every poll, and `keepmind doctor` on the one named in the data dir's server.json.
"""

from __future__ import annotations

from pathlib import Path

import psutil

from keepmind.engine import Check

from .client import ApiError, DaemonClient, proves_instance
from .files import read_server_json, read_token_file
from .instance import listening, unreached
from .logs import log_path

NAME = "Server"


def check_server(url: str, token: str | None, *, pid: int | None = None, logs: Path | None = None,
                 timeout: float = 2.0) -> Check:
    """A pass when GET /api/v1/status answers within `timeout` seconds, else an error with a remedy."""
    client = DaemonClient(url, token, timeout=timeout)
    try:
        client.get("/status")
        return Check(NAME, "pass", f"answering at {url}")
    except ApiError as exc:
        why = exc.message
    finally:
        client.close()
    where = f" (the logs: {logs})" if logs else ""
    if pid is not None and not psutil.pid_exists(pid):
        return Check(NAME, "error", f"{url} does not answer and its process (pid {pid}) is gone: Keepmind "
                                    f"stopped without cleaning up; start it again with `keepmind`{where}")
    who = f" (pid {pid})" if pid is not None else ""
    return Check(NAME, "error", f"Keepmind at {url}{who} does not answer ({why[:200]}): quit it (Quit in the "
                                f"tray menu, or end that process) and start it again with `keepmind`{where}")


def check_server_of(home: Path, *, timeout: float = 2.0) -> Check:
    """check_server for the instance the data dir's server.json names (a pass when none runs)."""
    info, token = read_server_json(home), read_token_file(home)
    if info is None:
        found = unreached(home)
        if found.running:
            resume = f"`kill -CONT {found.pid}` resumes it, " if found.suspended else ""
            return Check(NAME, "error", f"{found.summary}: {resume}`keepmind stop` ends it and `keepmind` starts it "
                                        f"again (the logs: {log_path(home)})")
        return Check(NAME, "pass", "not running: `keepmind` starts it with its tray icon, `keepmind serve` "
                                   "without one")
    if token is None:
        return Check(NAME, "error", f"server.json names {info['url']} but the token file is missing: quit "
                                    "Keepmind and start it again (it writes a new token file)")
    pid = info.get("pid") if isinstance(info.get("pid"), int) else None
    if not proves_instance(home, info, timeout=timeout):
        # The token goes only to the server that proves it wrote server.json: after a crash, any
        # local program may listen on its port, and would have been sent the token to read.
        found = unreached(home)
        if found.running:
            return Check(NAME, "error", f"{found.summary}: `keepmind stop` ends it and `keepmind` starts it again "
                                        f"(the logs: {log_path(home)})")
        if listening(info["url"], timeout):
            return Check(NAME, "error", f"{info['url']} answers, but not as the Keepmind that wrote server.json "
                                        "(another program holds its port, or a Keepmind of another data dir): no "
                                        "token was sent. Start Keepmind again with `keepmind`, or set "
                                        f"`server.port` to a free port (the logs: {log_path(home)})")
        return check_server(info["url"], None, pid=pid, logs=log_path(home), timeout=timeout)  # nothing there
    return check_server(info["url"], token, pid=pid, logs=log_path(home), timeout=timeout)


__all__ = ["check_server", "check_server_of"]
