"""Where Keepmind keeps its data: --home, else KEEPMIND_HOME, else the platform's user data dir."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def resolve_home(arg: str | os.PathLike | None = None) -> Path:
    if arg:
        return Path(arg).expanduser()
    env = os.environ.get("KEEPMIND_HOME")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("keepmind", appauthor=False))
