"""`keepmind stop`: stop the Keepmind running for a data dir, cleanly, from any shell.

It finds the server through server.json, checks it is this data dir's Keepmind before the token
goes anywhere (the nonce proof, see process/client.py), and asks it to stop with the local token
(`POST /api/v1/shutdown`): the server answers, then closes in order (HTTP server, workers with
their leases released, writer, database) and removes server.json. A server too old to know that
route gets SIGTERM instead, sent to the pid the lock file and server.json agree on.

A Keepmind that holds the data dir's lock but cannot be reached through server.json (it is
missing, unreadable or names another process; the server hangs or is suspended) is stopped with
SIGTERM to the lock's pid, once that pid shows it is a Keepmind process: `serve` and the tray
handle SIGTERM by stopping in the same order.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import psutil

from ..paths import home_of, home_option
from .numbers import non_negative


def register(sub) -> None:
    p = sub.add_parser("stop", help="stop the Keepmind running for the data dir (cleanly; `keepmind mcp` starts "
                                    "it again when an agent next needs it)")
    home_option(p)
    p.add_argument("--wait", type=non_negative, default=30.0, metavar="SECONDS",
                   help="how long to wait for it to finish stopping (default 30)")
    p.set_defaults(func=cmd_stop)


def stopped(home: Path, pid: int, wait_s: float) -> bool:
    """Wait until the process `pid` has ended (its database is closed by then). Its server.json
    need not be gone: a server that could not remove it (a read-only data dir) has still stopped."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _logs(home: Path, named: dict | None) -> str:
    """Where a stop that failed left its reason: keepmind.log (serve and the tray), and serve.log
    too for the server `keepmind mcp` started in the background (its stderr goes there)."""
    from ..process.logs import log_path, logs_dir

    background = logs_dir(home) / "serve.log"
    if named and named.get("idle_stop_minutes") and background.exists():
        return f"{log_path(home)} and {background}"
    return str(log_path(home))


def cmd_stop(args) -> int:
    from ..process.client import ApiError, DaemonClient
    from ..process.files import read_server_json
    from ..process.instance import unreached

    home = home_of(args)
    named = read_server_json(home)
    client = DaemonClient.from_home(home)
    if client is None:
        found = unreached(home)
        if not found.running:
            if named is None:
                print(f"no Keepmind is running for {home}: nothing to stop")
            else:
                print(f"no Keepmind is running for {home}: {found.reason}; nothing was stopped")
            return 0
        return stop_unreached(home, found, args.wait)
    pid = int((named or {}).get("pid") or 0)
    try:
        answer = client.post("/shutdown")
        pid = int(answer.get("pid") or pid)
    except ApiError as exc:
        if exc.status not in (404, 405) or not pid:
            raise
        os.kill(pid, signal.SIGTERM)  # an older server: the proof above showed pid is this data dir's Keepmind
    finally:
        client.close()
    if stopped(home, pid, args.wait):
        print(f"stopped the Keepmind at {client.url} (pid {pid})" + _left_behind(home, pid))
        return 0
    print(f"error: the Keepmind at {client.url} (pid {pid}) did not stop within {args.wait:g} s; see "
          f"{_logs(home, named)}, or end the process yourself", file=sys.stderr)
    return 1


def stop_unreached(home: Path, found, wait_s: float) -> int:
    """Stop the Keepmind holding the data dir's lock that server.json cannot reach: SIGTERM (which
    serve and the tray handle by stopping in order) to the lock's pid, once it shows it is Keepmind."""
    from ..process.lock import is_keepmind_process

    if not found.pid or found.pid == os.getpid() or not is_keepmind_process(found.pid):
        print(f"error: {found.summary}; it cannot be stopped from here: end that process yourself", file=sys.stderr)
        return 1
    try:
        os.kill(found.pid, signal.SIGTERM)
        if found.suspended and hasattr(signal, "SIGCONT"):
            os.kill(found.pid, signal.SIGCONT)  # it handles the SIGTERM once it runs again
    except OSError as exc:
        print(f"error: {found.summary}; it could not be sent SIGTERM ({exc.strerror or exc}): end that process "
              "yourself", file=sys.stderr)
        return 1
    if stopped(home, found.pid, wait_s):
        print(f"stopped the Keepmind of pid {found.pid} with SIGTERM (it could not be asked: {found.reason})"
              + _left_behind(home, found.pid))
        return 0
    print(f"error: the Keepmind of pid {found.pid} did not stop within {wait_s:g} s of SIGTERM ({found.reason}); "
          f"see {_logs(home, None)}, or end the process yourself", file=sys.stderr)
    return 1


def _left_behind(home: Path, pid: int) -> str:
    """What a stopped server could not clean up (its server.json, in a data dir it may not write)."""
    from ..process.files import SERVER_JSON, read_server_json

    info = read_server_json(home)
    if info is None or info.get("pid") != pid:
        return ""
    return f"; it could not remove {home / SERVER_JSON} (is the data dir writable?): delete it yourself"
