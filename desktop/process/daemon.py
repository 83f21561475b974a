"""The running Keepmind: engine + waitress on 127.0.0.1, server.json, the token file, one instance.

`Daemon(home).start()` takes the data dir's lock, opens the engine, makes sure a local token
exists, serves the app on 127.0.0.1 (port 0 picks a free one), and writes `server.json`
(url, pid, and a random nonce the server proves it holds on POST /api/v1/hello, so clients never
hand the token to another program listening on a stale server.json's port). `stop()` shuts
down in order — server, workers, writer, database — removes server.json and releases the lock;
it is idempotent and safe from a signal handler's thread.

Two ways to end it from outside besides a signal: `POST /api/v1/shutdown` (the local token only;
`keepmind stop`) calls `request_shutdown`, and a daemon started with `idle_stop_minutes` (the one
`keepmind mcp` starts in the background) says it is due to stop once no request arrived for that
long and no work is pending (`idle_expired`), so it is never orphaned for ever.
`request_shutdown` asks the host to stop it (the UI's Quit calls it through the app's
`KEEPMIND_SHUTDOWN`): `keepmind serve` passes its stop event; a host that passes nothing gets
SIGTERM raised in its own process, which it handles anyway.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import threading
import time
from pathlib import Path
from typing import Callable

from keepmind.engine import EngineError, make_private_dir, open_engine
from keepmind.engine.settings import defaults
from keepmind.webui import security
from keepmind.webui.app import create_app

from .files import read_token_file, remove_server_json, write_server_json, write_token_file
from .http import HOST, ApiServer, port_taken
from .lock import DataDirLock

log = logging.getLogger("keepmind.server")
LOCAL_TOKEN_NAME = "local"


class PortInUse(EngineError):
    status = 409


class ActivityMeter:
    """WSGI middleware remembering when the last request arrived (the proof of identity,
    POST /api/v1/hello, does not count: every client sends one before it knows the server)."""

    def __init__(self, app):
        self.app = app
        self.last = time.monotonic()

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != "/api/v1/hello":
            self.last = time.monotonic()
        return self.app(environ, start_response)

    def idle_seconds(self) -> float:
        return time.monotonic() - self.last


def ensure_local_token(engine, home: Path) -> str:
    """The secret in `<home>/token`, creating a personal, any-boundary token if it is missing or dead."""
    secret = read_token_file(home)
    created = engine.ensure_token(secret, name=LOCAL_TOKEN_NAME, audience_ceiling="personal")
    if created is None:
        return secret
    write_token_file(home, created.secret)
    log.info("api_token_created name=%s", created.token.name)
    return created.secret


def _port_in_use(port: int, exc: OSError) -> PortInUse:
    # said by the tray, `open` and `mcp`'s start too, which take no --port: server.port serves them all
    return PortInUse(f"cannot listen on {HOST}:{port} ({exc.strerror or exc}): stop the program using it, or give "
                     "Keepmind another port: server.port in keepmind.json (`keepmind serve --port N` for one run)")


class Daemon:
    """Everything `keepmind serve` runs, started and stopped in order."""

    def __init__(self, home: Path, *, port: int | None = None, settings=None, clock=None, threads: int = 8,
                 start_workers: bool = True, llm_api_key: str | None = None,
                 idle_stop_minutes: float | None = None, on_shutdown_request: Callable[[], None] | None = None):
        self.home = Path(home).absolute()
        self.idle_stop_minutes = idle_stop_minutes or None
        self.on_shutdown_request = on_shutdown_request  # the host's way to stop (see request_shutdown)
        self.shutdown_requested = threading.Event()
        self.activity: ActivityMeter | None = None
        self._llm_api_key = llm_api_key
        self._port = port
        self._settings = settings
        self._clock = clock
        self._threads = threads
        self._start_workers = start_workers
        self.lock = DataDirLock(self.home)
        self.engine = None
        self.server: ApiServer | None = None
        self.token: str | None = None
        self._stop_lock = threading.Lock()
        self._stopped = False

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> "Daemon":
        make_private_dir(self.home)
        self.lock.acquire()
        try:
            # a taken port is said at once, not after the models load (and try the hub) for nothing
            asked = self._port if self._port is not None else (self._settings or defaults())["server.port"]
            if (taken := port_taken(asked)) is not None:
                raise _port_in_use(asked, taken)
            self.engine = open_engine(self.home, settings=self._settings, clock=self._clock,
                                      start_workers=self._start_workers, llm_api_key=self._llm_api_key)
            self.token = ensure_local_token(self.engine, self.home)
            port = self.engine.settings["server.port"] if self._port is None else self._port
            max_body = self.engine.settings["server.max_body_bytes"]
            max_upload = self.engine.settings["server.max_upload_bytes"]
            app = create_app(self.engine, {"port": port, "max_body_bytes": max_body, "max_upload_bytes": max_upload,
                                           "local_token_id": self.engine.verify_token(self.token).id,
                                           "KEEPMIND_SHUTDOWN": self.request_shutdown})
            self.activity = ActivityMeter(app)
            # waitress is only the backstop: Flask answers oversize bodies with the JSON envelope (or,
            # on the pages that take files, an HTML page), each route with its own limit.
            try:
                self.server = ApiServer(self.activity, port, threads=self._threads,
                                        max_request_body_size=max(max_body * 4, max_upload) + 65_536)
            except OSError as exc:
                raise _port_in_use(port, exc) from None
            security.bind_port(app, self.server.port)
            nonce = secrets.token_urlsafe(32)  # this start's key: clients check the server with it
            security.bind_instance(app, nonce)
            self.server.start()
            write_server_json(self.home, self.server.url, os.getpid(), nonce,
                              idle_stop_minutes=self.idle_stop_minutes)
        except BaseException:
            self.stop()
            raise
        log.info("keepmind_serving url=%s", self.server.url)
        return self

    def request_shutdown(self) -> None:
        """Stop soon, from the process's own main loop (the API's POST /shutdown calls this).

        The host decides how: `keepmind serve` passes its stop event; any other host gets SIGTERM
        raised in its own process, which it must handle anyway (logout, `kill`), so it stops cleanly.
        """
        self.shutdown_requested.set()
        if self.on_shutdown_request is not None:
            self.on_shutdown_request()
        else:  # pragma: no cover - hosts other than `keepmind serve` (the tray) pass their own
            signal.raise_signal(signal.SIGTERM)

    def idle_expired(self) -> bool:
        """True when this daemon stops when idle and has been: no request for `idle_stop_minutes`
        and nothing waiting to be curated or distilled (that work would be lost until a next start)."""
        if not self.idle_stop_minutes or self.activity is None or self.engine is None:
            return False
        if self.activity.idle_seconds() < self.idle_stop_minutes * 60:
            return False
        return not self.engine.pending_work()

    def stop(self) -> None:
        """Server, workers, writer, database; then server.json and the lock. Idempotent."""
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        try:
            if self.server is not None:
                self.server.stop()
        finally:
            try:
                if self.engine is not None:
                    self.engine.close()  # workers release their leases, then the writer and the db
            finally:
                held = self.lock.held
                try:
                    remove_server_json(self.home, os.getpid())
                finally:
                    self.lock.release()  # even when server.json could not be removed (a read-only data dir)
        if held:  # a start that never took the lock (already running) did not stop the one that runs
            log.info("keepmind_stopped")

    def __enter__(self) -> "Daemon":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
