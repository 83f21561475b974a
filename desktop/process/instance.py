"""What can be said of a data dir's Keepmind when no proven client of it could be had.

`DaemonClient.from_home` gives a client only when the server server.json names proves it is this
data dir's Keepmind. When it does not, "not running" is only one of the answers: the data dir's
lock says whether a process holds it still (see lock.lock_holder), and then its server.json is
missing or unreadable, names another process, or names a server that does not answer (hung, or
suspended by a signal). `keepmind status`, `stop`, `pause`, doctor's Server check and a second
tray launch say the same thing from here.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from .files import SERVER_JSON, read_server_json, read_token_file
from .lock import lock_holder


@dataclass(frozen=True)
class Unreached:
    """Why no proven server answers for a data dir, and which process holds it if one does."""

    pid: int | None  # the lock holder (None: no process holds the data dir; 0: one does, pid not written yet)
    reason: str  # for the person: what is wrong (the command adds its own way on)
    suspended: bool = False  # the holder is stopped by a signal (SIGSTOP, Ctrl-Z): `kill -CONT` resumes it
    starting: bool = False  # no server.json yet: the holder may still be starting (loading its models)

    @property
    def running(self) -> bool:
        return self.pid is not None

    @property
    def who(self) -> str:
        return f"pid {self.pid}" if self.pid else "its pid not written yet"

    @property
    def summary(self) -> str:
        """One line: "Keepmind is running (pid N) but <reason>", or the reason nothing runs."""
        return f"Keepmind is running ({self.who}) but {self.reason}" if self.running else self.reason


def unreached(home: Path) -> Unreached:
    """Why `home`'s Keepmind gave no proven client: nothing runs, a crash left server.json behind,
    or a process holds the data dir but cannot be reached through server.json."""
    home = Path(home)
    named, pid = read_server_json(home), lock_holder(home)
    if pid is None:
        if named is None:
            return Unreached(None, "it has not been started, or it stopped")
        if not listening(named["url"]):  # a crash (kill -9, a power cut) left it behind
            return Unreached(None, f"server.json names {named['url']}, but nothing answers there: Keepmind "
                                   "stopped without cleaning up")
        return Unreached(None, f"server.json names {named['url']}, but what answers there is not this data dir's "
                               "Keepmind (left behind by a crash, its port taken since?); the token was not sent")
    if named is None:
        why = _unreadable(home / SERVER_JSON)
        if why is None:
            return Unreached(pid, "its server.json is missing (it is still starting, or the file was removed)",
                             starting=True)
        return Unreached(pid, f"its server.json cannot be used ({why})")
    if pid and named.get("pid") != pid:
        return Unreached(pid, f"server.json names another process (pid {named.get('pid')} at {named['url']}): "
                              "it is not this instance's")
    if read_token_file(home) is None:
        return Unreached(pid, f"the token file is missing (it serves at {named['url']})")
    if pid and _suspended(pid):
        return Unreached(pid, f"it is suspended (stopped by a signal) and does not answer at {named['url']}",
                         suspended=True)
    return Unreached(pid, f"it does not answer at {named['url']} as the instance that wrote server.json "
                          "(it hangs, or server.json was changed)")


def listening(url: str, timeout: float = 1.0) -> bool:
    """Does anything accept a connection at `url`'s host and port?"""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def _unreadable(path: Path) -> str | None:
    """Why server.json at `path` cannot be used (None: there is no such file)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{exc.strerror or exc}"
    except ValueError:
        return "it is not valid JSON"
    return "it names no url" if isinstance(data, dict) else "it is not a JSON object"


def _suspended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_STOPPED
    except psutil.Error:
        return False


__all__ = ["Unreached", "unreached"]
