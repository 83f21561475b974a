"""Who is signed in to the pages: one-time sign-in codes and browser sessions, in memory.

`keepmind open` asks the running server (an authenticated API call) for a one-time code: 256
random bits, valid 60 seconds, redeemed once. Redeeming it opens a browser session that acts
with the token the code was made for (its ceiling and boundaries). Everything lives in this
process's memory: a restart signs every browser out, and no code or session id is ever written
to disk or to a log. Only SHA-256 digests are kept as keys, so even this process's memory holds
no usable secret after a code is spent.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Callable

CODE_TTL_S = 60.0
SESSION_TTL_S = 12 * 3600.0  # a signed-in page lasts 12 hours (or until the server stops)
MAX_CODES = 100


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class BrowserSession:
    token_id: str
    csrf: str
    started: float


class SignIns:
    """One-time codes and browser sessions; thread-safe (waitress serves on several threads)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._codes: dict[str, tuple[str, float]] = {}  # digest -> (token id, expires)
        self._sessions: dict[str, BrowserSession] = {}  # digest -> session
        self._lock = threading.Lock()

    def issue_code(self, token_id: str) -> str:
        """A fresh one-time code for `token_id`, valid CODE_TTL_S seconds."""
        code = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._codes = {d: v for d, v in self._codes.items() if v[1] > now}
            if len(self._codes) >= MAX_CODES:  # a flood of unredeemed codes: the oldest go first
                for d in sorted(self._codes, key=lambda d: self._codes[d][1])[: len(self._codes) - MAX_CODES + 1]:
                    del self._codes[d]
            self._codes[_digest(code)] = (token_id, now + CODE_TTL_S)
        return code

    def redeem(self, code: object) -> str | None:
        """The token id a live code was made for; the code is spent either way."""
        if not isinstance(code, str) or not code or len(code) > 200:
            return None
        with self._lock:
            found = self._codes.pop(_digest(code), None)
        if found is None or found[1] <= self._clock():
            return None
        return found[0]

    def open_session(self, token_id: str) -> tuple[str, BrowserSession]:
        """A new browser session: (its id for the cookie, the session with its CSRF token)."""
        session_id = secrets.token_urlsafe(32)
        session = BrowserSession(token_id, secrets.token_urlsafe(32), self._clock())
        with self._lock:
            self._sessions[_digest(session_id)] = session
        return session_id, session

    def session(self, session_id: object) -> BrowserSession | None:
        if not isinstance(session_id, str) or not session_id or len(session_id) > 200:
            return None
        key = _digest(session_id)
        with self._lock:
            found = self._sessions.get(key)
            if found is not None and self._clock() - found.started > SESSION_TTL_S:
                del self._sessions[key]
                found = None
        return found

    def close(self, session_id: object) -> None:
        if isinstance(session_id, str):
            with self._lock:
                self._sessions.pop(_digest(session_id), None)


__all__ = ["CODE_TTL_S", "SESSION_TTL_S", "BrowserSession", "SignIns"]
