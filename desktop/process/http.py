"""waitress serving a WSGI app on 127.0.0.1 in its own thread, with a shutdown that really stops."""

from __future__ import annotations

import logging
import socket
import threading

from waitress.server import create_server

log = logging.getLogger("keepmind.server")
HOST = "127.0.0.1"


def port_taken(port: int) -> OSError | None:
    """Why `port` cannot be listened on now (None: it can), found before anything slow is loaded.
    The socket is set up as waitress sets up its own, so a port it could take passes."""
    try:
        port = int(port)
    except (TypeError, ValueError):
        return None  # waitress's own bind says what is wrong with it
    if not port:
        return None
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((HOST, port))
        return None
    except OSError as exc:
        return exc
    finally:
        probe.close()


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
        try:
            self.server.trigger.pull_trigger(thunk)
        except OSError:
            # The trigger closed between the check and the pull: the loop is ending. Once it has,
            # nothing else touches its map, so run fn here (it is idempotent for every caller).
            self._thread.join(5)
            fn()
            return
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
