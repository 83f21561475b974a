"""One Keepmind per data dir: an exclusive OS lock on `<home>/keepmind.lock`.

The OS releases it when the process dies, so a crash never leaves the data dir locked; the lock
file holds the pid of the process that holds it, and a clean stop removes it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from keepmind.engine import EngineError

from .files import LOCK_FILE, read_server_json


class AlreadyRunning(EngineError):
    status = 409


class DataDirLock:
    """An exclusive OS lock on `<home>/keepmind.lock`; released by the OS if the process dies."""

    def __init__(self, home: Path):
        self.path = Path(home) / LOCK_FILE
        self._fh = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(10):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)  # owner-only from its first byte
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)
            fh = os.fdopen(fd, "r+")
            try:
                _lock(fh)
            except OSError:
                fh.close()
                info = read_server_json(self.path.parent)
                where = f" at {info['url']} (pid {info.get('pid')})" if info else ""
                raise AlreadyRunning(f"Keepmind is already running for this data dir{where}: stop it first, "
                                     "or use another --home") from None
            if _same_file(fh, self.path):
                break
            fh.close()  # the holder removed the file as we locked it: lock the one at the path now
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        """Remove the lock file (while still holding it: a starter that opened it before then sees a
        different file at the path and tries again), then unlock."""
        if self._fh is not None:
            try:
                if sys.platform != "win32":
                    self.path.unlink(missing_ok=True)
                _unlock(self._fh)
            finally:
                self._fh.close()
                self._fh = None
                if sys.platform == "win32":  # pragma: no cover - an open file cannot be removed there
                    try:
                        self.path.unlink(missing_ok=True)
                    except OSError:
                        pass  # another instance holds it already


def _same_file(fh, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fh.fileno()), os.stat(path))
    except OSError:
        return False


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
