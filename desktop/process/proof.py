"""Proof that the server at server.json's url is the Keepmind that wrote it, asked before a token is
sent (by the client) and before a second start is refused (by the lock, whose file may be gone)."""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path

import httpx

from keepmind.webui.security import instance_proof

from .files import read_lock_pid


def proves_instance(home: Path, info: dict, *, http: httpx.Client | None = None, timeout: float = 3.0) -> bool:
    """Is the server at server.json's url the one that wrote it? Asked before any token is sent.

    After a crash server.json stays behind, and any local program may listen on its port now. The
    lock file must hold server.json's pid, and the server must answer a fresh random challenge with
    HMAC-SHA256 under server.json's nonce (POST /api/v1/hello, no token), which only the process
    that wrote it (or can read the owner-only file) can.
    """
    nonce, url = info.get("nonce"), info.get("url")
    if not isinstance(nonce, str) or not nonce or not isinstance(url, str):
        return False
    lock_pid = read_lock_pid(home)
    if lock_pid is not None and lock_pid != info.get("pid"):
        return False
    challenge = secrets.token_urlsafe(32)
    try:
        if http is not None and "Authorization" not in http.headers:
            answer = http.post(url.rstrip("/") + "/api/v1/hello", json={"challenge": challenge}, timeout=timeout)
        else:
            answer = httpx.post(url.rstrip("/") + "/api/v1/hello", json={"challenge": challenge}, timeout=timeout)
        answer = answer.json()
    except (httpx.HTTPError, ValueError):
        return False
    proof = answer.get("proof") if isinstance(answer, dict) else None
    return isinstance(proof, str) and hmac.compare_digest(proof, instance_proof(nonce, challenge))


__all__ = ["proves_instance"]
