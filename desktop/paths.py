"""Where Keepmind keeps its data: --home, else KEEPMIND_HOME, else the platform's user data dir.

Also what every command shares about that folder: its `--home` option, its settings file and its
models folder. Only the composition roots (the CLI, the tray) call these.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import platformdirs

from keepmind.engine import SETTINGS_NAME
from keepmind.engine.settings import Settings
from keepmind.engine.settings import load as load_settings


def resolve_home(arg: str | os.PathLike | None = None) -> Path:
    if arg:
        return Path(arg).expanduser()
    env = os.environ.get("KEEPMIND_HOME")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("keepmind", appauthor=False))


def settings_path(home: Path) -> Path:
    """The data dir's settings file (keepmind.json)."""
    return Path(home) / SETTINGS_NAME


def load_home_settings(home: Path) -> Settings:
    return load_settings(settings_path(home))


def home_option(parser: argparse.ArgumentParser) -> None:
    """Every command takes --home too (after the command name)."""
    parser.add_argument("--home", dest="home_sub", default=None, metavar="DIR",
                        help="data dir (default: $KEEPMIND_HOME, else the user data dir)")


def home_of(args) -> Path:
    """The data dir a command acts on: its own --home, else the global one, else the default."""
    return resolve_home(getattr(args, "home_sub", None) or getattr(args, "home", None))


def models_dir_of(args) -> Path:
    """The models folder of the command's data dir: its `memory.models_dir` setting, else <home>/models."""
    home = home_of(args)
    configured = load_home_settings(home).get("memory.models_dir")
    return Path(configured) if configured else home / "models"
