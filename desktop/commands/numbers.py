"""argparse types for the CLI's numeric options: a number out of range is refused by name.

argparse prints the message as `keepmind CMD: error: argument --OPT: MESSAGE` and exits 2, so
`--port 99999` or `--limit 0` stops there instead of doing something else than asked.
"""

from __future__ import annotations

import argparse
import math

# More than any count here needs, and far from SQLite's 64-bit integers (a bigger --limit overflowed them).
MAX_COUNT = 1_000_000_000


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _int(text: str) -> int:
    value = _whole(text)
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{value} is too large: give at most {MAX_COUNT:,}")
    return value


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def port(text: str) -> int:
    """A TCP port on 127.0.0.1: 1 to 65535, or 0 for any free one."""
    value = _whole(text)
    if not 0 <= value <= 65_535:
        raise argparse.ArgumentTypeError(f"{value} is not a port: give 1 to 65535, or 0 for any free port")
    return value


def positive_int(text: str) -> int:
    """A count of at least 1 (a --limit, --last N, a number of requests)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: give 1 or more")
    return value


def count(text: str) -> int:
    """A count that may be 0."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more")
    return value


def non_negative(text: str) -> float:
    """A number of 0 or more (seconds, minutes, a weight)."""
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative: give 0 or more")
    return value


def positive(text: str) -> float:
    """A number more than 0 (seconds a benchmark runs, say)."""
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is too small: give more than 0")
    return value


def fraction(text: str) -> float:
    """A share from 0 to 1 (a target retention, say)."""
    value = _float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a share: give 0 to 1")
    return value
