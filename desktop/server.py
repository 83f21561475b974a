"""The running Keepmind: engine + waitress on 127.0.0.1, server.json, the token file, one instance.

`Daemon(home).start()` takes the data dir's lock, opens the engine, makes sure a local token
exists, serves the app on 127.0.0.1 (port 0 picks a free one), and writes `server.json`
(url, pid). `stop()` shuts down in order — server, workers, writer, database — removes
server.json and releases the lock; it is idempotent and safe from a signal handler's thread.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from waitress.server import create_server

from keepmind.engine import open_engine, tokens
from keepmind.engine.errors import EngineError
from keepmind.webui import security
from keepmind.webui.app import create_app

log = logging.getLogger("keepmind.server")
SERVER_JSON = "server.json"
TOKEN_FILE = "token"
LOCK_FILE = "keepmind.lock"
LOCAL_TOKEN_NAME = "local"
HOST = "127.0.0.1"


class AlreadyRunning(EngineError):
    status = 409


class PortInUse(EngineError):
    status = 409


class ApiError(EngineError):
    """An error answer from the API (its envelope's message and status), or no answer at all."""

    def __init__(self, message: str, status: int = 503):
        super().__init__(message)
        self.status = status


# -- one instance per data dir --------------------------------------------------------------------


class DataDirLock:
    """An exclusive OS lock on `<home>/keepmind.lock`; released by the OS if the process dies."""

    def __init__(self, home: Path):
        self.path = Path(home) / LOCK_FILE
        self._fh = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            _lock(fh)
        except OSError:
            fh.close()
            info = read_server_json(self.path.parent)
            where = f" at {info['url']} (pid {info.get('pid')})" if info else ""
            raise AlreadyRunning(f"Keepmind is already running for this data dir{where}: stop it first, "
                                 "or use another --home") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        if self._fh is not None:
            try:
                _unlock(self._fh)
            finally:
                self._fh.close()
                self._fh = None


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fh):
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock(fh):
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _lock(fh):
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fh):
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


# -- server.json and the token file ---------------------------------------------------------------


def read_server_json(home: Path) -> dict | None:
    try:
        data = json.loads((Path(home) / SERVER_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("url"), str) else None


def write_server_json(home: Path, url: str, pid: int) -> None:
    path = Path(home) / SERVER_JSON
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"url": url, "pid": pid}, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def remove_server_json(home: Path, pid: int) -> None:
    """Remove server.json if it is still ours."""
    info = read_server_json(home)
    if info is not None and info.get("pid") == pid:
        (Path(home) / SERVER_JSON).unlink(missing_ok=True)


def read_token_file(home: Path) -> str | None:
    try:
        return (Path(home) / TOKEN_FILE).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def write_token_file(home: Path, secret: str) -> Path:
    """Write the secret to `<home>/token`, readable by the owner only (0600) from the first byte."""
    path = Path(home) / TOKEN_FILE
    tmp = path.with_name(TOKEN_FILE + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)
        os.write(fd, (secret + "\n").encode("ascii"))
    finally:
        os.close(fd)
    tmp.replace(path)
    return path


def ensure_local_token(engine, home: Path) -> str:
    """The secret in `<home>/token`, creating a personal, any-boundary token if it is missing or dead."""
    secret = read_token_file(home)
    if secret:
        with engine.db.snapshot() as conn:
            if tokens.verify(conn, secret) is not None:
                return secret

    def create_local(conn, now):
        name = LOCAL_TOKEN_NAME
        n = 1
        while conn.execute("SELECT 1 FROM api_tokens WHERE name=?", (name,)).fetchone():
            n += 1
            name = f"{LOCAL_TOKEN_NAME}-{n}"
        return tokens.create(conn, name, "personal", ["*"], now)

    created = engine.write(create_local, engine.now())
    write_token_file(home, created.secret)
    log.info("api_token_created name=%s", created.token.name)
    return created.secret


# -- waitress, stopped for real -------------------------------------------------------------------


class ApiServer:
    """waitress serving a WSGI app on 127.0.0.1 in its own thread, with a shutdown that really stops.

    `server.close()` alone closes only the listening socket: open keep-alive channels keep the
    loop alive and the task threads keep running. `stop()` stops accepting, lets running tasks
    finish (task dispatcher shutdown), closes every channel and the trigger on the loop thread,
    and joins the loop thread.
    """

    def __init__(self, app, port: int = 0, *, threads: int = 8, max_request_body_size: int | None = None):
        self._map: dict = {}
        kw = dict(host=HOST, port=port, threads=threads, map=self._map, ident="keepmind",
                  clear_untrusted_proxy_headers=True, channel_timeout=60)
        if max_request_body_size:
            kw["max_request_body_size"] = max_request_body_size
        try:
            self.server = create_server(app, **kw)
        except OSError:
            for dispatcher in list(self._map.values()):  # the socket and trigger made before bind failed
                dispatcher.close()
            raise
        self.port = self.server.effective_port
        self.url = f"http://{HOST}:{self.port}"
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    @property
    def dispatcher(self):
        return self.server.task_dispatcher

    def start(self) -> "ApiServer":
        self._thread = threading.Thread(target=self._run, name="keepmind-http", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.server.run()
        finally:
            self._stopped.set()

    def _on_loop(self, fn) -> None:
        """Run `fn` on the loop thread (asyncore maps are not thread-safe)."""
        if self._thread is None or not self._thread.is_alive():
            fn()
            return
        done = threading.Event()

        def thunk():
            try:
                fn()
            finally:
                done.set()
        self.server.trigger.pull_trigger(thunk)
        done.wait(5)

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            if self._thread is None or self._stopped.is_set() and not self._map:
                self._close_everything()
                return
        # 1. no new connections
        self._on_loop(self._stop_accepting)
        # 2. running requests finish, queued ones are cancelled, task threads exit
        self.dispatcher.shutdown(cancel_pending=True, timeout=timeout)
        # 3. close every channel and the trigger: the map empties and the loop returns
        self._on_loop(self._close_everything)
        self._thread.join(timeout)
        if self._thread.is_alive():  # pragma: no cover - would mean a stuck loop
            log.warning("http_loop_did_not_stop")

    def _stop_accepting(self) -> None:
        server = self.server
        if server.accepting:
            server.accepting = False
            try:
                server.del_channel()
                server.socket.close()
            except OSError:
                pass

    def _close_everything(self) -> None:
        for dispatcher in list(self._map.values()):
            if dispatcher is self.server.trigger:
                continue
            try:
                dispatcher.close()
            except OSError:
                pass
        try:
            self.server.trigger.close()
        except OSError:
            pass
        self._map.clear()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


# -- the daemon -----------------------------------------------------------------------------------


class Daemon:
    """Everything `keepmind serve` runs, started and stopped in order."""

    def __init__(self, home: Path, *, port: int | None = None, settings=None, clock=None, threads: int = 8,
                 start_workers: bool = True, llm_api_key: str | None = None):
        self.home = Path(home)
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
        self.home.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        try:
            self.engine = open_engine(self.home, settings=self._settings, clock=self._clock,
                                      start_workers=self._start_workers, llm_api_key=self._llm_api_key)
            self.token = ensure_local_token(self.engine, self.home)
            port = self.engine.settings["server.port"] if self._port is None else self._port
            max_body = self.engine.settings["server.max_body_bytes"]
            app = create_app(self.engine, {"port": port, "max_body_bytes": max_body})
            # waitress is only the backstop: Flask answers oversize bodies with the JSON envelope.
            try:
                self.server = ApiServer(app, port, threads=self._threads,
                                        max_request_body_size=max_body * 4 + 65_536)
            except OSError as exc:
                raise PortInUse(f"cannot listen on {HOST}:{port} ({exc.strerror or exc}): stop the program "
                                "using it, or pick another port with --port or server.port") from None
            security.bind_port(app, self.server.port)
            self.server.start()
            write_server_json(self.home, self.server.url, os.getpid())
        except BaseException:
            self.stop()
            raise
        log.info("keepmind_serving url=%s", self.server.url)
        return self

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
                remove_server_json(self.home, os.getpid())
                self.lock.release()
        log.info("keepmind_stopped")

    def __enter__(self) -> "Daemon":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# -- talking to a running Keepmind ----------------------------------------------------------------


class DaemonClient:
    """A small client of /api/v1 for the CLI, the MCP adapter and the bench (thread-safe)."""

    def __init__(self, url: str, token: str, *, timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url + "/api/v1", timeout=timeout,
                                 headers={"Authorization": f"Bearer {token}"})

    @classmethod
    def from_home(cls, home: Path, token: str | None = None, **kw) -> "DaemonClient | None":
        """A client for the server named in `<home>/server.json` (with `token`, else the token file)."""
        info, secret = read_server_json(home), token or read_token_file(home)
        if info is None or secret is None:
            return None
        return cls(info["url"], secret, **kw)

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


def start_background(home: Path) -> subprocess.Popen:
    """Start `keepmind serve --home HOME` detached, logging to <home>/logs/serve.log."""
    logs = Path(home) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    detach = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS} \
        if sys.platform == "win32" else {"start_new_session": True}  # outlives the MCP client
    with open(logs / "serve.log", "ab") as log_file:
        return subprocess.Popen(
            [sys.executable, "-m", "keepmind", "serve", "--home", str(home)],
            stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, close_fds=True, **detach,
        )


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


def connect(home: Path, *, start: bool = True, wait_s: float = 30.0, token: str | None = None) -> DaemonClient:
    """A client of the Keepmind serving `home`, starting `keepmind serve` in the background if none is.

    `token` is the API token to use (default: the local token in `<home>/token`).
    """
    home = Path(home)
    client = _healthy_client(home, token)
    if client is not None:
        return client
    if not start:
        raise ApiError(f"Keepmind is not running for {home}: start `keepmind serve --home {home}`")
    process = start_background(home)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        client = _healthy_client(home, token)
        if client is not None:
            return client
        if process.poll() is not None:
            # It may have lost the lock to another instance that is starting: give that one a moment.
            deadline = min(deadline, time.monotonic() + 5.0)
        time.sleep(0.1)
    raise ApiError(f"`keepmind serve` did not come up within {wait_s:.0f} s; see {home / 'logs' / 'serve.log'}")
