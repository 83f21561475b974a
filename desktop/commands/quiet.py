"""Commands that say things in their own words keep a logger's warnings off the terminal while they work."""

from __future__ import annotations

import logging
from contextlib import contextmanager


@contextmanager
def quieted(name: str, args=None):
    """The logger `name` shows errors only inside the block (unless `args` asked for -v), and its
    level is given back after, so the next command in the same process (a test) logs as before."""
    logger = logging.getLogger(name)
    level = logger.level
    if not getattr(args, "verbose", False):
        logger.setLevel(logging.ERROR)
    try:
        yield logger
    finally:
        logger.setLevel(level)
