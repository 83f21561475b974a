"""One Keepmind per data dir: an exclusive OS lock on `<home>/keepmind.lock`.

The OS releases it when the process dies, so a crash never leaves the data dir locked; the lock
file holds the pid of the process that holds it, and a clean stop removes it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from keepmind.engine import EngineError

from .files import LOCK_FILE, read_lock_pid, read_server_json
from .proof import proves_instance


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
                _lock_soon(fh)
            except OSError:
                fh.close()
                info = read_server_json(self.path.parent)
                where = f" at {info['url']} (pid {info.get('pid')})" if info else ""
                raise AlreadyRunning(f"Keepmind is already running for this data dir{where}: stop it first, "
                                     "or use another --home") from None
            if _same_file(fh, self.path):
                break
            fh.close()  # the holder removed the file as we locked it: lock the one at the path now
        if (running := _running_without_its_lock(self.path.parent)) is not None:
            if _same_file(fh, self.path):
                self.path.unlink(missing_ok=True)  # the empty file this start made: not the running one's
            _unlock(fh)
            fh.close()
            raise AlreadyRunning(f"Keepmind is already running for this data dir at {running['url']} (pid "
                                 f"{running.get('pid')}), though its {LOCK_FILE} was deleted: stop it first "
                                 "(`keepmind stop`), or use another --home")
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh

    @property
    def held(self) -> bool:
        return self._fh is not None

    def release(self) -> None:
        """Remove the lock file (while still holding it: a starter that opened it before then sees a
        different file at the path and tries again), then unlock.

        Only our own file is removed: if someone deleted it while we ran, another instance may have
        started and locked a new one at the path, and that one is not ours to remove."""
        if self._fh is not None:
            try:
                if sys.platform != "win32" and _same_file(self._fh, self.path):
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


def lock_holder(home: Path) -> int | None:
    """The pid of the process holding the data dir's lock, None when no process holds it (0: one
    does, but has not written its pid yet).

    It tells a running Keepmind whose server.json is missing, unreadable or names a server that
    does not answer from one that is gone. Where it can, it asks the OS (a non-blocking lock
    attempt, let go at once; a starter that meets it retries, see `_lock_soon`); on Windows,
    whose locked bytes cannot be read, the pid in the file must be a live Keepmind process.
    """
    path = Path(home) / LOCK_FILE
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        pid = read_lock_pid(home)
        return pid if pid is not None and is_keepmind_process(pid) else None
    try:
        fh = open(path, "rb")  # never created here: no file, no holder
    except OSError:
        return None
    with fh:
        try:
            _lock(fh)
        except OSError:
            return _written_pid(fh)
        _unlock(fh)
        return None


def _written_pid(fh) -> int:
    for _ in range(5):  # the holder writes its pid just after it locks
        fh.seek(0)
        try:
            return int(fh.read().decode("ascii").strip())
        except ValueError:
            time.sleep(0.02)
    return 0


def is_keepmind_process(pid: int) -> bool:
    """Is `pid` a live process running Keepmind (checked before a signal is sent to it)?"""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return "keepmind" in " ".join(process.cmdline()).lower()
    except psutil.Error:
        return False


def _running_without_its_lock(home: Path) -> dict | None:
    """server.json of a Keepmind that still runs though its lock file was deleted by hand (so the OS
    lock, taken on a new file, cannot see it): a live process other than this one that proves it
    wrote server.json (proof.proves_instance). None when server.json is absent or stale."""
    info = read_server_json(home)
    pid = info.get("pid") if info else None
    if not isinstance(pid, int) or pid == os.getpid() or not is_keepmind_process(pid):
        return None
    return info if proves_instance(home, info, timeout=2.0) else None


def _lock_soon(fh) -> None:
    """Lock `fh`, allowing a moment for `lock_holder`'s probe of it (a status, a stop) to let go."""
    for _ in range(4):
        try:
            return _lock(fh)
        except OSError:
            time.sleep(0.02)
    _lock(fh)


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
