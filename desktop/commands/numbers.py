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


def _within(parse, ok, said: str):
    """An argparse type: `parse` the text, then refuse a value `ok` does not allow, saying `said`
    (formatted with the value and the text as given)."""
    def check(text: str):
        value = parse(text)
        if not ok(value):
            raise argparse.ArgumentTypeError(said.format(value=value, text=text))
        return value
    return check


# A TCP port on 127.0.0.1: 1 to 65535, or 0 for any free one.
port = _within(_whole, lambda v: 0 <= v <= 65_535, "{value} is not a port: give 1 to 65535, or 0 for any free port")
# A count of at least 1 (a --limit, --last N, a number of requests); a count that may be 0.
positive_int = _within(_int, lambda v: v >= 1, "{value} is too small: give 1 or more")
count = _within(_int, lambda v: v >= 0, "{value} is negative: give 0 or more")
# A number of 0 or more (seconds, minutes, a weight); more than 0 (seconds a benchmark runs); a share.
non_negative = _within(_float, lambda v: v >= 0, "{text} is negative: give 0 or more")
positive = _within(_float, lambda v: v > 0, "{text} is too small: give more than 0")
fraction = _within(_float, lambda v: 0 <= v <= 1, "{text} is not a share: give 0 to 1")
