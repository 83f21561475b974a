"""Scans of a SQLite file for words that must be gone (an erase for good): every value of every
table, and the raw bytes of the file and its WAL."""

from __future__ import annotations

import zlib

import apsw


def occurrences(path, words) -> list[tuple[str, str]]:
    """(table, column) of every value in the SQLite file that holds one of `words`: every column of
    every table (FTS shadow tables and BLOBs too, a compressed BLOB also unpacked), not a list."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    found = []
    try:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            columns = [c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')]
            for column in columns:
                for (value,) in conn.execute(f'SELECT "{column}" FROM "{table}"'):
                    texts = []
                    if isinstance(value, str):
                        texts.append(value)
                    elif isinstance(value, bytes):
                        texts.append(value.decode("utf-8", "replace"))
                        try:
                            texts.append(zlib.decompress(value).decode("utf-8", "replace"))
                        except zlib.error:
                            pass
                    if any(w in t.lower() for t in texts for w in words):
                        found.append((table, column))
    finally:
        conn.close()
    return sorted(set(found))


def in_the_files(path, words) -> list[str]:
    """The database's files (itself, its WAL) whose raw bytes hold one of `words`: a deleted row's
    bytes stay in freed pages and old WAL frames unless the file is rewritten."""
    found = []
    for file in sorted(path.parent.glob(path.name + "*")):
        data = file.read_bytes().lower()
        if any(w.encode() in data for w in words):
            found.append(file.name)
    return found
