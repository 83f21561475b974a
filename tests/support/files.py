"""Small helpers the tests share: a zip made in memory, and waiting for a started server."""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path

from keepmind.desktop.process.client import DaemonClient


def zipped(members: dict) -> io.BytesIO:
    """A zip archive in memory holding `members` (name -> text or bytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    buffer.seek(0)
    return buffer


def healthy_client(home: Path, process, timeout: float = 60.0) -> DaemonClient | None:
    """The client of the Keepmind that `process` started on `home` once it answers healthy, or None
    when it exits or does not within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        candidate = DaemonClient.from_home(home)
        if candidate is not None and candidate.healthy():
            return candidate
        if candidate is not None:
            candidate.close()
        time.sleep(0.1)
    return None
