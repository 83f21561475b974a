"""A fake Hugging Face hub on loopback speaking the protocol huggingface_hub 2.x uses to download.

HEAD and GET on /{repo}/resolve/{revision}/{path}: ETag (the file's sha256, like LFS files),
X-Repo-Commit, Content-Length, Accept-Ranges; Range requests answered with 206; anything else is a
404 with the hub's X-Error-Code. `cut_next_get` makes the next GET stop mid-file and drop the
connection (an interrupted download).
"""

from __future__ import annotations

import hashlib
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATH_RE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")


class FakeHub:
    def __init__(self):
        self.files: dict[tuple[str, str, str], bytes] = {}
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.cut_next_get = False
        self.commit: str | None = None  # answer this X-Repo-Commit instead of the requested revision
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                hub._serve(self, body=False)

            def do_GET(self):
                hub._serve(self, body=True)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def add(self, repo: str, revision: str, path: str, data: bytes) -> None:
        self.files[(repo, revision, path)] = data

    def start(self) -> "FakeHub":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _serve(self, h: BaseHTTPRequestHandler, body: bool) -> None:
        rng = h.headers.get("Range")
        self.requests.append((h.command, h.path, rng))
        m = PATH_RE.match(h.path.split("?")[0])
        data = self.files.get((m["repo"], m["rev"], m["path"])) if m else None
        if data is None:
            payload = b'{"error":"Entry not found"}'
            h.send_response(404)
            h.send_header("X-Error-Code", "EntryNotFound")
            h.send_header("X-Error-Message", "Entry not found")
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            if body:
                h.wfile.write(payload)
            return
        start = 0
        if rng and (rm := re.match(r"bytes=(\d+)-", rng)):
            start = int(rm.group(1))
        part = data[start:]
        h.send_response(206 if start else 200)
        h.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        h.send_header("X-Repo-Commit", self.commit or m["rev"])
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(len(part)))
        if start:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        h.end_headers()
        if not body:
            return
        if self.cut_next_get:
            self.cut_next_get = False
            h.wfile.write(part[: len(part) // 2])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)
            return
        h.wfile.write(part)
