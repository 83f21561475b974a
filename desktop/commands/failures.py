"""What the CLI says when the data dir or its database fails: one line for a person, not a stack trace.

A data dir on a read-only disk, a folder Keepmind may not write, a keepmind.db overwritten or cut
short: these reach the commands as OSError and as SQLite's errors. `STORE_ERRORS` are the ones
that mean the disk or the file, not a bug (SQLite's SQLError or ConstraintError, say, stay
tracebacks), and `store_failure` words each for the person: which file or folder, what is wrong
with it, what to do.
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from keepmind.engine import DB_NAME

from ..paths import resolve_home

RESTORE = ("stop Keepmind, move it (with its -wal and -shm files) aside, and `keepmind import` your last "
           "`keepmind export`")

# SQLite's errors about the database file itself, with what each means for the person.
_DATABASE = {
    apsw.NotADBError: ("is not a Keepmind database", RESTORE),
    apsw.CorruptError: ("is damaged", RESTORE),
    apsw.CantOpenError: ("cannot be opened", "it must be a file Keepmind can read and write"),
    apsw.ReadOnlyError: ("is read-only", "Keepmind must be able to write it"),
    apsw.FullError: ("cannot grow", "free some disk space"),
    apsw.IOError: ("could not be read or written", "check the disk it is on"),
    apsw.BusyError: ("is locked by another process", "try again once it is done"),
}

STORE_ERRORS: tuple[type[BaseException], ...] = (OSError, *_DATABASE)


def store_failure(exc: BaseException, home: Path) -> str:
    """One line on what is wrong with the data dir `home` (or another file named in `exc`)."""
    home = Path(home)
    for kind, (what, todo) in _DATABASE.items():
        if isinstance(exc, kind):
            return f"{home / DB_NAME} {what} (SQLite: {exc}): {todo}"
    path = _named(exc)
    reason = getattr(exc, "strerror", None) or str(exc)
    if path is None:
        return reason
    if isinstance(exc, (FileExistsError, NotADirectoryError)):  # a folder was wanted where a file is
        in_the_way = next((p for p in (path, *path.parents) if _is_file(p)), None)
        if in_the_way is not None:
            reason = f"{in_the_way} is a file, not a folder"
            if in_the_way == path and home not in (path, *path.parents):
                return reason
    if path == home:
        return f"cannot use the data dir {home}: {reason} (Keepmind must be able to write there)"
    if home in path.parents:
        return f"cannot use {path} in the data dir: {reason} (Keepmind must be able to write there)"
    return f"{path}: {reason}"


def failure_line(exc: BaseException, args) -> str:
    """The one line a command says for a store failure: `store_failure`, and where the failure is
    about the data dir, a pointer to `keepmind doctor` (not from the doctor itself)."""
    home = resolve_home(getattr(args, "home_sub", None) or getattr(args, "home", None))
    doctor = getattr(args, "command", None) != "doctor" and about_data_dir(exc, home)
    return store_failure(exc, home) + ("; `keepmind doctor` checks the data dir" if doctor else "")


def about_data_dir(exc: BaseException, home: Path) -> bool:
    """Is `exc` about the data dir (its folder or database), so that `keepmind doctor` can tell more?"""
    if not isinstance(exc, OSError):
        return True
    path = _named(exc)
    return path is not None and (path == Path(home) or Path(home) in path.parents)


def _named(exc: BaseException) -> Path | None:
    """The file an OSError names, if it names one by path."""
    name = getattr(exc, "filename", None)
    return Path(os.fsdecode(name)) if isinstance(name, (str, bytes, os.PathLike)) else None


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # not even that can be looked at: it is not the file in the way we can name
        return False
