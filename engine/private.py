"""Owner-only files: the data dir is 0700 and every file in it 0600.

The data dir holds memories, transcripts and the local token, so no other user of the machine
may read any of it. `open_engine` makes the dir, creates the database file 0600 before SQLite
opens it (SQLite gives its -wal and -shm files the database file's mode), and repairs the modes
of an existing dir (`repair`). Files Keepmind writes elsewhere in the dir go through
`write_private` or `open_private`. Symlinks are never followed (a models folder may be a link to
a shared pack that is not ours to change). On Windows the modes mean little: the profile's ACLs
apply, and nothing here is checked.
"""

from __future__ import annotations

import os
import stat
import sys
import zipfile
from pathlib import Path, PurePosixPath

from .checks import Check

DIR_MODE = 0o700
FILE_MODE = 0o600
CHECKED = sys.platform != "win32"


def make_private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) 0700 (the parents are left as they are). A dir that
    exists loses what others may do, never gains what its owner may not: a data dir made 0500 by
    hand stays 0500."""
    path = Path(path)
    existed = path.is_dir()
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if CHECKED:
        # always a chmod: on a read-only disk, or a dir not the user's, it fails here and says so
        os.chmod(path, DIR_MODE if not existed else _owner_only(os.stat(path).st_mode))
    return path


def make_private_dirs(path: Path) -> Path:
    """Create `path` and each missing parent 0700 (`mkdir(parents=True)` would give the parents the
    umask's mode: `models/` 0755 under a new `models/<id>/`). Folders that exist, and links to them,
    are left as they are."""
    path = Path(path)
    missing = []
    here = path
    while not here.is_dir() and here.parent != here:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue  # made meanwhile (or a file: the next mkdir says so)
        if CHECKED:
            os.chmod(folder, DIR_MODE)
    return path


def create_private_file(path: Path) -> None:
    """Create an empty 0600 file unless it exists (so SQLite's -wal and -shm inherit 0600)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def open_private(path: Path, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a file for writing ("w", "a", "wb", "ab"), created 0600 from its first byte."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode.startswith("a") else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    if CHECKED:
        os.fchmod(fd, FILE_MODE)
    return os.fdopen(fd, mode, encoding=None if "b" in mode else encoding)


def write_private(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically (a 0600 temp file renamed over it)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    with open_private(tmp) as fh:
        fh.write(text)
    tmp.replace(path)
    return path


def _wider(mode: int) -> bool:
    return bool(stat.S_IMODE(mode) & 0o077)


def _owner_only(mode: int) -> int:
    """`mode` without the group's and others' bits: the owner's stay as they were."""
    return stat.S_IMODE(mode) & 0o700


def _walk(home: Path):
    """(path, lstat) of the dir and of every dir and file under it, never through a symlink."""
    home = Path(home)
    yield home, os.lstat(home)
    for root, dirs, files in os.walk(home, followlinks=False):
        for name in dirs + files:
            path = Path(root) / name
            try:
                info = os.lstat(path)
            except OSError:
                continue  # removed meanwhile
            if stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode):
                yield path, info


def exposed(home: Path) -> list[str]:
    """The dir and files under `home` that other users may read or write (relative names)."""
    if not CHECKED or not Path(home).is_dir():
        return []
    return [_name(home, p) for p, info in _walk(home) if _wider(info.st_mode)]


def repair(home: Path) -> list[str]:
    """Take from the dir and everything in it what the group and others may do (a 0644 file
    becomes 0600, a 0755 dir 0700; the owner's bits stay as they are); returns what was wider."""
    if not CHECKED or not Path(home).is_dir():
        return []
    fixed = []
    for path, info in _walk(home):
        if _wider(info.st_mode):
            try:
                os.chmod(path, _owner_only(info.st_mode))
            except OSError:
                continue  # not ours: doctor names it
            fixed.append(_name(home, path))
    return fixed


def _name(home: Path, path: Path) -> str:
    return "the data dir" if Path(path) == Path(home) else Path(path).relative_to(home).as_posix()


def check_privacy(engine) -> Check:
    """Doctor: is the data dir owner-only, and was it found readable by others at start?"""
    name = "Data dir permissions"
    if not CHECKED:
        return Check(name, "pass", "not checked on Windows (the user profile's access rules apply)")
    now = exposed(engine.home)
    if now:
        return Check(name, "warning", f"other users can read {_listed(now)} in {engine.home}: run "
                     f"`chmod -R go-rwx {engine.home}` (or restart Keepmind, which repairs the modes)")
    if engine.repaired_modes:
        # News for a while after the start (the tray turns amber and says it once), then a note: it
        # was fixed, and an icon amber all day for it would hide what needs a look now.
        fresh = engine.now() - engine.started_at < REPAIR_NEWS_MS
        return Check(name, "warning" if fresh else "pass",
                     f"{_listed(engine.repaired_modes)} in {engine.home} were readable by other "
                     "users; Keepmind made them owner-only when it started. If that keeps happening, look for "
                     "what widens them (a umask of 000, a sync or backup tool)")
    return Check(name, "pass", f"{engine.home} and its files are owner-only (0700/0600)")


REPAIR_NEWS_MS = 15 * 60_000  # how long after the start modes repaired then are a warning


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:5])
    return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")


CHUNK = 1 << 20


def copy_limited(src, dst, limit: int, too_big) -> int:
    """Copy `src` to `dst` in chunks, at most `limit` bytes: one more and `too_big()` (an
    EngineError written for the person) is raised, before the excess is written."""
    total = 0
    while chunk := src.read(CHUNK):
        total += len(chunk)
        if total > limit:
            raise too_big()
        dst.write(chunk)
    return total


__all__ = ["check_privacy", "copy_limited", "create_private_file", "exposed", "make_private_dir", "make_private_dirs",
           "open_private", "repair", "write_private"]


def unsafe_member(info: zipfile.ZipInfo) -> str | None:
    """What makes a zip member unfit to unpack into a folder of ours (None: nothing): a path that
    leaves the folder (absolute, `..`, a drive letter) or a symbolic link. The imports and the
    model installs refuse such an archive, each in its own words."""
    name = info.filename
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
        return "a path that escapes the archive's folder"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "a symbolic link"
    return None
