"""Time as milliseconds since the epoch, injectable so tests never sleep."""

import time
from datetime import datetime, timezone
from typing import Callable

Clock = Callable[[], int]

DAY_MS = 24 * 3600 * 1000
HOUR_MS = 3600 * 1000


def system_clock() -> int:
    return int(time.time() * 1000)


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start_ms: int = 1_767_225_600_000):  # 2026-01-01T00:00:00Z
        self.now = start_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def parse_time(value) -> int | None:
    """Accept epoch ms (int) or an ISO 8601 string; return epoch ms."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a time must be epoch milliseconds or an ISO 8601 string")
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)
