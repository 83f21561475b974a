"""Doctor: checks a person can act on, each saying what is wrong and what to do about it.

This module runs them and owns the store's own: the database (integrity, size, write-ahead
log), who may read the data dir (private.py) and the disk it lives on. Each subsystem adds its
checks when it attaches (engine.doctor_checks): the models (embeddings, model files), recall (the
relevance gate) and the write path (checkpoint backlog, curation LLM). The desktop adds one of its
own: whether the server answers.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import apsw

from .checks import LEVELS, Check
from .db import connect, scalar
from .errors import EngineClosed
from .private import check_privacy
from .writepath.doctor import BACKLOG_WARN

log = logging.getLogger("keepmind.doctor")
MB = 1_048_576
DATABASE_WARN_BYTES = 4096 * MB  # a store this big is slow to back up, export and check
WAL_WARN_BYTES = 256 * MB  # the log is folded back into the database unless a reader holds it open
DISK_FREE_MIN_BYTES = 1024 * MB  # below this, SQLite can fail a write: the memory would be lost


def check_database(engine, *, size_warn: int = DATABASE_WARN_BYTES, wal_warn: int = WAL_WARN_BYTES) -> Check:
    """Integrity (PRAGMA quick_check), size, and the size of the write-ahead log.

    The check runs on a connection of its own, opened for it and closed after, in one read
    transaction. Never on the thread's reader (Database.reader): quick_check runs each FTS5 table's
    own check, which reads the index through the structure FTS5 cached on that connection when it
    last used the table (a search, a recall, the previous check) without first checking that the
    database changed since. Once the writer had merged or replaced the segments that structure
    names, a long-lived reader reported "fts5: corruption found reading blob ..." for a sound
    database: on the Doctor page 9 loads in 12 while Keepmind wrote, never from the CLI, which
    opens a fresh connection.
    """
    path = Path(engine.db.path)
    if engine.db.closed:
        raise EngineClosed("the memory engine is closed; restart Keepmind and try again")
    try:
        conn = connect(path, readonly=True)
        try:
            conn.execute("BEGIN")
            try:
                result = scalar(conn, "PRAGMA quick_check")
                size = scalar(conn, "PRAGMA page_count") * scalar(conn, "PRAGMA page_size")
            finally:
                conn.execute("COMMIT")
        finally:
            conn.close()
    except apsw.Error as exc:
        result, size = f"{type(exc).__name__}: {exc}", _file_size(path)
    wal = _file_size(path.with_name(path.name + "-wal"))
    sizes = f"{size / MB:.1f} MB, write-ahead log {wal / MB:.1f} MB"
    if result != "ok":
        return Check("Database", "error",
                     f"integrity check failed ({' '.join(str(result).split())[:300]}): stop Keepmind, copy "
                     f"{path.name} aside, and restore from your last `keepmind export` (`keepmind import FILE` "
                     "into a fresh data dir)")
    if wal > wal_warn:
        return Check("Database", "warning",
                     f"integrity ok, {sizes}: the write-ahead log is not being folded back into the database "
                     "(a reader holds it open); quit Keepmind and start it again, and stop other programs "
                     f"that have {path.name} open")
    if size > size_warn:
        return Check("Database", "warning",
                     f"integrity ok, {sizes}: the store is large; `keepmind stats` shows what it holds, "
                     "lower memory.recall.receipt_retention_days to keep fewer recall receipts, or "
                     "`keepmind export` and import into a fresh data dir to compact it")
    return Check("Database", "pass", f"integrity ok, {sizes}")


def check_disk(engine, *, min_free: int = DISK_FREE_MIN_BYTES) -> Check:
    """Free space where the data dir lives: SQLite needs room for its log and new pages."""
    try:
        free = shutil.disk_usage(engine.home).free
    except OSError as exc:
        return Check("Disk space", "warning", f"cannot read the free space of {engine.home} ({exc})")
    text = f"{free / (1024 * MB):.1f} GB free where the data dir lives ({engine.home})"
    if free < min_free:
        return Check("Disk space", "error",
                     f"only {text}; under {min_free / (1024 * MB):.1f} GB new memories may fail to be "
                     "written: free some space on that disk, or move the data dir (--home, KEEPMIND_HOME) "
                     "to a disk with more room")
    return Check("Disk space", "pass", text)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _guarded(check, engine) -> Check:
    """A check that crashes is itself a finding, never the end of the doctor run."""
    try:
        return check(engine)
    except Exception as exc:  # noqa: BLE001 - reported as an error check, with the log holding the trace
        log.exception("doctor_check_failed check=%s", getattr(check, "__name__", check))
        name = getattr(check, "__name__", "check").removeprefix("check_").replace("_", " ").capitalize()
        return Check(name, "error", f"the check itself failed ({type(exc).__name__}: {exc}); see the logs")


def run_checks(engine) -> list[Check]:
    checks = [_guarded(check_database, engine), _guarded(check_privacy, engine), _guarded(check_disk, engine)]
    checks += [_guarded(extra, engine) for extra in engine.doctor_checks]
    return checks


__all__ = ["BACKLOG_WARN", "Check", "LEVELS", "check_database", "check_disk", "run_checks"]
