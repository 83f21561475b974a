"""The files a running Keepmind leaves in its data dir for agents and the CLI to find it:
`server.json` (url, pid, nonce), `token` (the local API token's secret) and the lock file that
holds the server's pid; all owner-only."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

from keepmind.engine import write_private

SERVER_JSON = "server.json"
TOKEN_FILE = "token"
LOCK_FILE = "keepmind.lock"


def read_server_json(home: Path) -> dict | None:
    try:
        data = json.loads((Path(home) / SERVER_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and isinstance(data.get("url"), str)):
        return None
    # Keepmind serves on loopback only: a server.json naming any other host (one planted in a data
    # dir a cloned repository ships) is not ours, and the token is never sent there.
    try:
        url = urlsplit(data["url"])
        loopback = url.scheme == "http" and url.hostname in ("127.0.0.1", "localhost", "::1") and url.port
    except ValueError:
        loopback = False
    return data if loopback else None


def write_server_json(home: Path, url: str, pid: int, nonce: str, *, idle_stop_minutes: float | None = None) -> None:
    """Write server.json owner-only (0600), atomically: where the server is, its pid, the nonce of
    this start (the key of its instance proof, see webui.security.instance_proof), and, for a
    server that stops itself when idle, after how many minutes (`keepmind status` says so)."""
    info = {"url": url, "pid": pid, "nonce": nonce}
    if idle_stop_minutes:
        info["idle_stop_minutes"] = idle_stop_minutes
    write_private(Path(home) / SERVER_JSON, json.dumps(info, indent=2) + "\n")


def read_lock_pid(home: Path) -> int | None:
    """The pid in the data dir's lock file (the process holding the lock writes it there)."""
    try:
        return int((Path(home) / LOCK_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


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
