"""Keepmind's log file: `<home>/logs/keepmind.log`, rotated by size so it never fills the disk.

The composition roots that run Keepmind (`keepmind serve` and the tray) call `setup_file_log`;
every `keepmind.*` logger's INFO records go there, which is where the named memory events
(`memory_recall_gate_degraded`, `memory_embedding_ready`, `keepmind_serving`, ...) end up.
`keepmind doctor` prints where the file is.
"""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

from keepmind.engine.private import make_private_dirs, open_private

LOG_NAME = "keepmind.log"
MAX_BYTES = 5 * 1024 * 1024  # per file; with 3 backups the logs never take more than 20 MB
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s %(threadName)s %(message)s"


def logs_dir(home: Path) -> Path:
    return Path(home) / "logs"


def log_path(home: Path) -> Path:
    return logs_dir(home) / LOG_NAME


class PrivateRotatingFileHandler(RotatingFileHandler):
    """A rotating log whose every file (the first, and each after a rollover) is created 0600: the
    log names sessions and memories, and the data dir is owner-only."""

    def _open(self):
        return open_private(Path(self.baseFilename), "a", encoding=self.encoding)


def setup_file_log(home: Path, *, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> RotatingFileHandler:
    """Send the `keepmind` loggers' INFO and above to the data dir's rotating log file.

    Returns the handler (remove_file_log takes it off again: tests and a second start in one process).
    """
    folder = make_private_dirs(logs_dir(home))  # before open_engine: owner-only from the start, never "repaired"
    handler = PrivateRotatingFileHandler(folder / LOG_NAME, maxBytes=max_bytes, backupCount=backups,
                                         encoding="utf-8", delay=True)
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger = logging.getLogger("keepmind")
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    return handler


def remove_file_log(handler: logging.Handler) -> None:
    logging.getLogger("keepmind").removeHandler(handler)
    handler.close()


__all__ = ["LOG_NAME", "PrivateRotatingFileHandler", "log_path", "logs_dir", "remove_file_log", "setup_file_log"]
