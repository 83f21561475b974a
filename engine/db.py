"""SQLite access: one writer thread owns the only read-write connection; readers get their own.

Every write is a function `fn(conn, *args)` run inside one transaction on the writer thread, in
submission order. A write is acknowledged (its future resolves) only after COMMIT returned, so a
crash after the acknowledgement cannot lose it (WAL, synchronous=NORMAL survives a process kill).
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import apsw
import apsw.bestpractice

from .errors import EngineClosed, StorageFailed

log = logging.getLogger("keepmind.db")
_bestpractice_lock = threading.Lock()
_bestpractice_applied = False
_STOP = object()
BUSY_TIMEOUT_MS = 5000
OPTIMIZE_WAIT_MS = 100  # what apsw's best practice waited for the optimize on open


def _apply_bestpractice() -> None:
    global _bestpractice_applied
    with _bestpractice_lock:
        if not _bestpractice_applied:
            # Every recommended practice but the optimize on open, which raised from inside
            # apsw.Connection() when the writer held the lock past its 100 ms: a reader thread's
            # first query failed with SQLITE_BUSY (connect optimizes itself and skips it then).
            apsw.bestpractice.apply(tuple(p for p in apsw.bestpractice.recommended
                                          if p is not apsw.bestpractice.connection_optimize))
            _bestpractice_applied = True


def connect(path: Path, readonly: bool = False) -> apsw.Connection:
    """Open a connection with the pragmas every Keepmind connection uses."""
    _apply_bestpractice()
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    conn = apsw.Connection(str(path), flags=flags)
    if not readonly and conn.readonly("main"):
        # SQLite opens a write-protected file (or one in a write-protected folder) read-only without
        # a word; every write would then fail later as an internal error, and status say healthy
        conn.close()
        raise apsw.ReadOnlyError(f"{path.name} or its folder is write-protected: it opened read-only")
    if not readonly:
        # as apsw's best practice optimizes on open, waiting at most 100 ms: statistics are an
        # optimisation, skipped when the writer holds the lock longer (a failure here was a
        # reader's first query failing with SQLITE_BUSY)
        conn.set_busy_timeout(OPTIMIZE_WAIT_MS)
        _optimize(conn)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    if not readonly:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def rows(conn: apsw.Connection, sql: str, params: Any = ()) -> list[dict]:
    """Run a query and return each row as a dict keyed by column name."""
    cur = conn.execute(sql, params)
    try:
        names = [d[0] for d in cur.get_description()]
    except apsw.ExecutionCompleteError:
        return []
    return [dict(zip(names, r)) for r in cur]


def one(conn: apsw.Connection, sql: str, params: Any = ()) -> dict | None:
    found = rows(conn, sql, params)
    return found[0] if found else None


def scalar(conn: apsw.Connection, sql: str, params: Any = ()) -> Any:
    for row in conn.execute(sql, params):
        return row[0]
    return None


def _immediate(conn: apsw.Connection, fn: Callable[..., Any], args, kwargs) -> Any:
    """Run `fn` in BEGIN IMMEDIATE ... COMMIT (ROLLBACK on exception).

    IMMEDIATE takes the write lock up front, waiting out the busy timeout. A deferred transaction
    that reads first and then writes gets SQLITE_BUSY at once, without waiting, whenever another
    connection holds the write lock at that moment: a CLI in another process, or a new reader
    connection running apsw's `PRAGMA optimize` on open.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn, *args, **kwargs)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


# The writer refreshes the planner's statistics (`PRAGMA optimize`) each time the rows it changed
# doubled since the last time. Statistics gathered when the store was small mislead the planner as
# it grows: while a 60,000-memory import ran on one connection, FTS5's range deletes of merged
# segments fell back to full scans (2,158 of them: 297 ms of a 2,000-memory batch) and the import
# slowed from 8,400 to 2,300 memories/s; a fresh connection (which optimizes on open) ran at 8,000/s.
OPTIMIZE_MIN_CHANGES = 1000


def _optimize(conn: apsw.Connection) -> None:
    try:
        conn.execute("PRAGMA optimize=0x10002")  # every table, as on open; not only those queried
    except apsw.Error:  # statistics are an optimisation: a busy or read-only moment skips them
        log.debug("sqlite_optimize_skipped", exc_info=True)


class _Bare:
    """A writer-thread function run outside a transaction (Database.scrub)."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn


def _vacuum(conn: apsw.Connection) -> bool:
    # The planner's statistics keep sample rows of the indexes (sqlite_stat4: an erased anchor's name
    # was one): sampled again from what is left, before the file is rewritten without the old pages.
    conn.execute("ANALYZE")
    conn.execute("VACUUM")
    return _truncate_wal(conn)


def _truncate_wal(conn: apsw.Connection) -> bool:
    busy, _, _ = next(conn.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
    return not busy


@contextmanager
def secure_delete(conn: apsw.Connection, on: bool = True) -> Iterator[None]:
    """While inside, what the statements free is overwritten with zeros (an old row version's cell,
    a freed overflow page) instead of lingering in the file's pages: for the rare scrub of text that
    must not stay (a refused proposal of an erased claim, a secret), without a VACUUM of the file.
    Its page copies in the WAL stay until Database.truncate_wal."""
    if not on:
        yield
        return
    (prior,) = next(conn.execute("PRAGMA secure_delete"))
    conn.execute("PRAGMA secure_delete=ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete={ {0: 'OFF', 1: 'ON'}.get(prior, 'FAST') }")


class Database:
    """The database file, its writer thread and per-thread read connections."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._writer_conn = connect(self.path)
        self._queue: queue.Queue = queue.Queue()
        self._closed = False
        self._close_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        self.write_failure: str | None = None  # why the last write failed on the disk, until one succeeds
        self._thread = threading.Thread(target=self._run, name="keepmind-writer", daemon=True)
        self._thread.start()

    # -- writes -----------------------------------------------------------------------------

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        """Queue `fn(conn, *args)` to run in one transaction on the writer thread."""
        if self._closed:
            raise EngineClosed("the memory engine is closed; restart Keepmind and try again")
        future: Future = Future()
        self._queue.put((fn, args, kwargs, future))
        return future

    def write(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a write function and wait for its committed result (or its exception)."""
        if threading.current_thread() is self._thread:
            # Already inside a write transaction: nest as a savepoint.
            with self._writer_conn:
                return fn(self._writer_conn, *args, **kwargs)
        return self.submit(fn, *args, **kwargs).result()

    def _run(self) -> None:
        conn = self._writer_conn
        optimized_at = max(OPTIMIZE_MIN_CHANGES, conn.total_changes())
        while True:
            item = self._queue.get()
            if item is _STOP:
                break
            fn, args, kwargs, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                if isinstance(fn, _Bare):  # VACUUM and checkpoints cannot run inside a transaction
                    result = fn.fn(conn, *args, **kwargs)
                else:
                    result = _immediate(conn, fn, args, kwargs)
            except (apsw.FullError, apsw.IOError) as exc:
                # the disk, not the request: said in words (nothing of it was kept), and held for
                # status until a write succeeds again
                self.write_failure = (f"writes to {self.path.name} are failing: the disk is full or the file "
                                      f"may not grow ({exc}); free some space")
                future.set_exception(StorageFailed(f"{self.write_failure}: nothing of this request was kept"))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)
            else:
                self.write_failure = None
                future.set_result(result)
            if conn.total_changes() >= 2 * optimized_at:
                optimized_at = conn.total_changes()
                _optimize(conn)
        conn.close()

    def scrub(self) -> bool:
        """Rewrite the file without its free space (VACUUM) and empty the WAL: a deleted row's bytes
        otherwise linger in freed pages and in old page copies in the WAL until overwritten. For an
        erase for good (purge.py); it rewrites the whole file, so it is not for ordinary deletes.
        True when the WAL was emptied (a reader still in a snapshot can keep it for now)."""
        return self.submit(_Bare(_vacuum)).result()

    def truncate_wal(self) -> bool:
        """Copy the WAL into the file and empty it, so no old copy of a page (a row scrubbed under
        secure_delete) stays in it; cheap, unlike scrub. True when emptied (a reader still in a
        snapshot can keep it for now: the next checkpoint copies over those frames)."""
        return self.submit(_Bare(_truncate_wal)).result()

    # -- reads ------------------------------------------------------------------------------

    def reader(self) -> apsw.Connection:
        """This thread's read connection (opened on first use)."""
        if self._closed:
            raise EngineClosed("the memory engine is closed; restart Keepmind and try again")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path)
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def snapshot(self) -> Iterator[apsw.Connection]:
        """A read transaction: every query inside sees the same committed state."""
        conn = self.reader()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Finish every queued write, stop the writer, close all connections. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._queue.put(_STOP)
        self._thread.join()
        with self._readers_lock:
            for conn in self._readers:
                try:
                    conn.close()
                except apsw.Error:
                    pass
            self._readers.clear()

    @property
    def closed(self) -> bool:
        return self._closed
