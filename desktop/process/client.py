"""Talking to a running Keepmind: a small API client, and starting `keepmind serve` when none answers.

Used by the CLI, the MCP adapter and the benchmarks; it finds the server through the data dir's
`server.json`, checks that the server listening there is the one that wrote it (`proves_instance`),
and only then sends the local token (or the one it is given).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from keepmind.engine import EngineError, make_private_dir, open_private

from .files import read_server_json, read_token_file
from .instance import unreached
from .logs import MAX_BYTES
from .proof import proves_instance


class ApiError(EngineError):
    """An error answer from the API (its envelope's message and status), or no answer at all."""

    def __init__(self, message: str, status: int = 503):
        super().__init__(message)
        self.status = status


class DaemonClient:
    """A small client of /api/v1 for the CLI, the MCP adapter and the bench (thread-safe)."""

    def __init__(self, url: str, token: str | None, *, timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url + "/api/v1", timeout=timeout,
                                 headers={"Authorization": f"Bearer {token}"} if token else {})

    @classmethod
    def from_home(cls, home: Path, token: str | None = None, **kw) -> "DaemonClient | None":
        """A client for the server named in `<home>/server.json` (with `token`, else the token file),
        or None when there is none, or the one listening there does not prove it is that server
        (the token is set only after the proof)."""
        info, secret = read_server_json(home), token or read_token_file(home)
        if info is None or secret is None:
            return None
        client = cls(info["url"], None, **kw)
        if not proves_instance(home, info, http=client.http):
            client.close()
            return None
        client.http.headers["Authorization"] = f"Bearer {secret}"
        return client

    def request(self, method: str, path: str, body: dict | None = None) -> dict:
        try:
            response = self.http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise ApiError(f"Keepmind is not reachable at {self.url} ({type(exc).__name__}): "
                           "is `keepmind serve` running?") from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ApiError(f"Keepmind answered {response.status_code} without JSON", response.status_code or 502)
        if response.status_code >= 400 or data.get("ok") is not True:
            raise ApiError(str(data.get("error") or f"HTTP {response.status_code}"), response.status_code)
        return data

    def get(self, path: str) -> dict:
        return self.request("GET", path)

    def post(self, path: str, body: dict | None = None) -> dict:
        return self.request("POST", path, body or {})

    def healthy(self) -> bool:
        """True when the server answers; a refused token is an error, not "not running"."""
        try:
            self.get("/status")
            return True
        except ApiError as exc:
            if exc.status in (401, 403):
                raise ApiError(f"Keepmind at {self.url} refused the API token: {exc.message}", exc.status) from None
            return False

    def close(self) -> None:
        self.http.close()


class StartFailed(ApiError):
    """`keepmind serve` was started in the background and did not come up; the message says why
    (the child's own error from its log, e.g. the port is in use)."""


@dataclass(frozen=True)
class Started:
    process: subprocess.Popen
    log: Path
    offset: int  # the log's size before this start: what follows is this child's


def rotate_serve_log(log: Path, max_bytes: int = MAX_BYTES) -> None:
    """serve.log takes every background start's output, appended: past `max_bytes` it becomes
    serve.log.1 (the one before goes), so it never grows without end."""
    try:
        if log.stat().st_size > max_bytes:
            os.replace(log, log.with_name(log.name + ".1"))
    except OSError:
        pass  # none yet, or not ours to move: appending still works


def start_background(home: Path, *, idle_stop_minutes: float | None = None) -> Started:
    """Start `keepmind serve --home HOME` detached, logging to <home>/logs/serve.log; with
    `idle_stop_minutes` it stops itself once idle that long (see Daemon.idle_expired)."""
    logs = make_private_dir(Path(home) / "logs")
    log = logs / "serve.log"
    detach = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS} \
        if sys.platform == "win32" else {"start_new_session": True}  # outlives the MCP client
    # -P: the client's working folder is not on the path (a checkout of Keepmind there has a
    # `keepmind/` folder that is not the installed package); cwd: the daemon keeps no folder busy.
    argv = [sys.executable, "-P", "-m", "keepmind", "serve", "--home", str(Path(home).resolve())]
    if idle_stop_minutes:
        argv += ["--stop-after-idle", f"{idle_stop_minutes:g}"]
    rotate_serve_log(log)
    with open_private(log, "ab") as log_file:
        offset = log_file.tell()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                                   close_fds=True, cwd=home, **detach)
    return Started(process, log, offset)


def start_error(started: Started) -> str | None:
    """Why the child started by `started` failed, from what it wrote to the log: its last
    `error: ...` line (the CLI's words for the person), else the last line it wrote."""
    try:
        with started.log.open("rb") as fh:
            fh.seek(started.offset)
            text = fh.read(256_000).decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line[len("error: "):] for line in lines if line.startswith("error: ")]
    return errors[-1] if errors else (lines[-1][:500] if lines else None)


def _healthy_client(home: Path, token: str | None) -> DaemonClient | None:
    """A client of the server in server.json if it answers (closed otherwise; a refused token raises)."""
    client = DaemonClient.from_home(home, token)
    if client is None:
        return None
    try:
        if client.healthy():
            return client
    except ApiError:
        client.close()
        raise
    client.close()
    return None


def _await_models(client: DaemonClient, deadline: float) -> None:
    """Wait (until `deadline`) while the server just started says its models are still loading:
    the first recall an agent asks of it is then by meaning, not by words alone."""
    while time.monotonic() < deadline:
        try:
            reasons = client.get("/status").get("memory", {}).get("reasons") or []
        except ApiError:
            return
        if not any("still loading" in str(r) for r in reasons):
            return
        time.sleep(0.1)


def _held_elsewhere(home: Path, token: str | None, deadline: float) -> "DaemonClient | None":
    """When a live process holds `home`'s lock, a second `keepmind serve` would only fail with
    "already running" after its whole start: wait for the one there instead (it is starting and
    has not written server.json yet), and say what it is if it never answers. None: nothing holds it."""
    found = unreached(home)
    if not found.running:
        return None
    while found.starting and time.monotonic() < deadline:
        time.sleep(0.1)
        client = _healthy_client(home, token)
        if client is not None:
            _await_models(client, deadline)
            return client
        found = unreached(home)
        if not found.running:
            return None  # it stopped while starting: start one
    raise ApiError(f"{found.summary}: `keepmind stop --home {home}` ends it, then start it again")


def connect(home: Path, *, start: bool = True, wait_s: float = 30.0, token: str | None = None,
            idle_stop_minutes: float | None = None) -> DaemonClient:
    """A client of the Keepmind serving `home`, starting `keepmind serve` in the background if none is.

    `token` is the API token to use (default: the local token in `<home>/token`). A start that
    fails raises StartFailed with the child's own reason (a port in use, a broken data dir) as soon
    as the child exits, not after the whole wait.
    """
    home = Path(home)
    client = _healthy_client(home, token)
    if client is not None:
        return client
    if not start:
        raise ApiError(f"Keepmind is not running for {home}: start `keepmind serve --home {home}`")
    held = _held_elsewhere(home, token, time.monotonic() + wait_s)
    if isinstance(held, DaemonClient):
        return held
    started = start_background(home, idle_stop_minutes=idle_stop_minutes)
    # Reap it whenever it ends (`keepmind stop`, idle), so it never lingers as a zombie of this process.
    threading.Thread(target=started.process.wait, name="keepmind-serve-reaper", daemon=True).start()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        client = _healthy_client(home, token)
        if client is not None:
            _await_models(client, deadline)
            return client
        if started.process.poll() is not None:
            cause = start_error(started)
            if cause and "already running" not in cause:
                raise StartFailed(f"Keepmind could not start: {cause} (log: {started.log})")
            # It lost the lock to another instance that is starting: give that one a moment.
            deadline = min(deadline, time.monotonic() + 5.0)
        time.sleep(0.1)
    cause = start_error(started)
    raise StartFailed(f"`keepmind serve` did not answer within {wait_s:.0f} s"
                      + (f"; it said: {cause}" if cause else "") + f" (log: {started.log})")
