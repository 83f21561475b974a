"""`keepmind stop`: stop the Keepmind running for a data dir, cleanly, from any shell.

It finds the server through server.json, checks it is this data dir's Keepmind before the token
goes anywhere (the nonce proof, see process/client.py), and asks it to stop with the local token
(`POST /api/v1/shutdown`): the server answers, then closes in order (HTTP server, workers with
their leases released, writer, database) and removes server.json. A server too old to know that
route gets SIGTERM instead, sent to the pid the lock file and server.json agree on.
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
    """Wait until the server of `pid` is gone: its server.json removed (the database is closed by
    then) and the process ended."""
    from ..process.files import read_server_json

    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        info = read_server_json(home)
        if (info is None or info.get("pid") != pid) and not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def cmd_stop(args) -> int:
    from ..process.client import ApiError, DaemonClient
    from ..process.files import read_server_json

    home = home_of(args)
    named = read_server_json(home)
    client = DaemonClient.from_home(home)
    if client is None:
        if named is None:
            print(f"no Keepmind is running for {home}: nothing to stop")
        else:
            print(f"no Keepmind is running for {home}: server.json names {named['url']}, but what answers there "
                  "is not this data dir's Keepmind (left behind by a crash?); nothing was stopped")
        return 0
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
        print(f"stopped the Keepmind at {client.url} (pid {pid})")
        return 0
    print(f"error: the Keepmind at {client.url} (pid {pid}) did not stop within {args.wait:g} s; see "
          f"{home / 'logs' / 'serve.log'}, or end the process yourself", file=sys.stderr)
    return 1
