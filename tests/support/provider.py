"""The fake LLM provider: a scripted chat-completions server on loopback (the real protocol).

Each request is answered by the first script whose `when` text occurs in the request's system
message (so observer and curator calls can be scripted separately), in order; requests are kept
for assertions. `llm_settings(provider)` points an engine at it; `drain(engine)` curates now.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from keepmind.engine.settings import defaults


class ScriptedProvider:
    def __init__(self):
        self.requests: list[dict] = []
        self.scripts: list[tuple[str, list]] = []
        self.release = threading.Event()  # a "hang" reply waits on this (never a sleep)
        self.default = None  # the reply when no script matches (None: HTTP 500)
        self.received = threading.Event()  # set on every request (tests wait on it, never sleep)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, when: str, *replies) -> None:
        """Queue replies for requests whose system prompt contains `when`. A reply is a string
        (the assistant content), ("status", code, body), ("raw", dict) or "hang"."""
        for entry in self.scripts:
            if entry[0] == when:
                entry[1].extend(replies)
                return
        self.scripts.append((when, list(replies)))

    def calls(self, when: str) -> list[dict]:
        return [r for r in self.requests if when in r["messages"][0]["content"]]

    def _reply_for(self, body: dict):
        system = body["messages"][0]["content"]
        for when, replies in self.scripts:
            if when in system and replies:
                return replies.pop(0)
        if self.default is not None:
            return self.default
        return ("status", 500, "no scripted reply left")

    def _handler(self):
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                body["_path"] = self.path
                body["_auth"] = self.headers.get("Authorization")
                provider.requests.append(body)
                provider.received.set()
                reply = provider._reply_for(body)
                if callable(reply):
                    reply = reply(body)
                if reply == "hang":
                    provider.release.wait(30)
                    return
                if isinstance(reply, tuple) and reply[0] == "status":
                    self._send(reply[1], {"error": {"message": reply[2]}})
                    return
                if isinstance(reply, tuple) and reply[0] == "raw":
                    self._send(200, reply[1])
                    return
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })

            def _send(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

        return Handler

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def llm_settings(provider, **extra):
    values = {"memory__llm__base_url": provider.base_url, "memory__llm__model": "scripted-1",
              "memory__llm__timeout_seconds": 5}
    values.update(extra)
    return defaults().with_overrides(**values)


def drain(engine, now=None):
    return engine.writepath.curation.drain(now)
