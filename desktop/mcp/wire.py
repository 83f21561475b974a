"""The stdio wire of `keepmind mcp`: every line the client sends gets an answer it can match.

The SDK's stdio transport (mcp 2.x) validates each line and, when a line is not a JSON-RPC message,
hands the session an exception that answers nobody: a client that sent a `tools/call` holding a
lone surrogate (`"\\ud800"`), a line that is not JSON, or a batch waited for a reply that never came
(the JSON API answers the same input 400). `AnsweringStdin` sits in front of that check: a line
that passes goes on unchanged; one that does not is answered here with a JSON-RPC error, its
request's id when one can be read (`-32700` not JSON, `-32600` not a request), and is not passed on.
A notification (no id) that does not validate is dropped unanswered, as JSON-RPC says.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger("keepmind.mcp")


def bad_line_answer(line: str) -> types.JSONRPCError | None:
    """The error a line that is no JSON-RPC message gets (None: a notification, which gets none)."""
    try:
        message: Any = json.loads(line)
    except ValueError:
        return _error(None, types.PARSE_ERROR, "Parse error: the line is not JSON (send one JSON-RPC message "
                                               "per line, UTF-8, strings without lone surrogates)")
    if isinstance(message, list):
        return _error(None, types.INVALID_REQUEST, "Invalid request: batches are not supported (send one "
                                                   "message per line)")
    if not isinstance(message, dict):
        return _error(None, types.INVALID_REQUEST, "Invalid request: a message is a JSON object")
    ident = message.get("id")
    if "id" not in message and "method" in message:
        return None  # a notification: JSON-RPC answers none, even a broken one
    if isinstance(ident, bool) or not isinstance(ident, (int, str)):
        ident = None
    if _has_lone_surrogate(message):
        # Python's json reads "\ud800" into a str the SDK's parser (rightly) refuses
        return _error(ident, types.INVALID_PARAMS, "Invalid params: a string holds a lone surrogate (such as "
                                                   "\\ud800), which is not text: send valid UTF-16 pairs")
    return _error(ident, types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message (jsonrpc \"2.0\", "
                                                "an id, a method or a result)")


def _error(ident: int | str | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message))


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


class AnsweringStdin:
    """The lines of stdin for the SDK's stdio_server: valid ones pass, invalid ones are answered
    through `answer_with` (the server's write stream, known once the transport is up)."""

    def __init__(self, lines=None):
        self._lines = lines if lines is not None else _stdin_lines()
        self._write = None
        self._ready = anyio.Event()

    def close(self) -> None:
        """Give fd 0 back (the SDK's claim), once serving ends."""
        close = getattr(self._lines, "close", None)
        if close is not None:
            close()

    def answer_with(self, write_stream) -> None:
        self._write = write_stream
        self._ready.set()

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._lines.__anext__()
            if not line.strip():
                continue
            try:
                types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                return line
            except ValidationError:  # what the SDK would have handed on unanswered
                answer = bad_line_answer(line)
            log.warning("mcp_bad_line length=%d answered=%s", len(line),
                        answer.error.code if answer is not None else "no (a notification)")
            if answer is not None:
                await self._ready.wait()
                await self._write.send(SessionMessage(answer))


def _stdin_lines():
    """stdin as the SDK reads it (UTF-8, undecodable bytes replaced), from the SDK's claim of fd 0
    where this SDK has one (fd 0 then points at the null device while serving: a child process
    reading stdin gets EOF, not the client's messages)."""
    try:
        from mcp.server.stdio import _claim_fd, _open_stdin_diversion, _UnownedTextWrapper
        buffer, release = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
        wrapper = _UnownedTextWrapper(buffer, encoding="utf-8", errors="replace")
    except ImportError:  # another 2.x without them: the stream in place, as the SDK's v1 read it
        import io
        release = None
        wrapper = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    return _LineIterator(anyio.wrap_file(wrapper), release)


class _LineIterator:
    def __init__(self, file, release):
        self._file, self._release = file, release
        self._lines = file.__aiter__()

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        return await self._lines.__anext__()

    def close(self) -> None:
        if self._release is not None:
            self._release()
            self._release = None


__all__ = ["AnsweringStdin", "bad_line_answer"]
