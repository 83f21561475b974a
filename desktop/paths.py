"""Where Keepmind keeps its data: --home, else KEEPMIND_HOME, else the platform's user data dir.

Also what every command shares about that folder: its `--home` option, its settings file and its
models folder. Only the composition roots (the CLI, the tray) call these.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import platformdirs

from keepmind.engine import DB_NAME, SETTINGS_NAME, EngineError, InvalidInput
from keepmind.engine.settings import Settings
from keepmind.engine.settings import load as load_settings


class NoDataDir(EngineError):
    """The data dir a command should read does not exist (a typo must not become a new store)."""

    status = 404


def default_home() -> Path:
    return Path(platformdirs.user_data_dir("keepmind", appauthor=False))


def resolve_home(arg: str | os.PathLike | None = None) -> Path:
    if arg:
        return Path(arg).expanduser()
    env = os.environ.get("KEEPMIND_HOME")
    if env:
        return Path(env).expanduser()
    return default_home()


# What Keepmind itself puts in a data dir before its database exists (a folder of only these, or
# of files whose names start with "keepmind.", or hidden ones like .DS_Store, may become one).
OWN_NAMES = frozenset({SETTINGS_NAME, "models", "logs", "hooks", "token", "server.json", "imports", "exports",
                       "uploads", "agent-connection.txt"})


def _not_keepminds(home: Path) -> list[str]:
    """What a folder without a database holds that Keepmind never writes (sorted names)."""
    try:
        names = [p.name for p in home.iterdir()]
    except OSError:
        return []  # unreadable: opening it says why
    return sorted(n for n in names if n not in OWN_NAMES and not n.startswith(("keepmind.", ".")))


def checked_home(home: Path, *, create: bool = False) -> Path:
    """`home` if it is a data dir. Commands that only read refuse a missing one, naming it and the
    default; commands that start Keepmind (`create`) make it, and say so the first time. A folder
    that holds other files and no database is refused by every command: Keepmind makes its data
    dir owner-only, file by file, and would do that to a home folder named by a slip of --home."""
    if home.exists() and not home.is_dir():
        raise NoDataDir(f"{home} is a file, not a data dir: --home (or KEEPMIND_HOME) names the folder "
                        "Keepmind keeps its data in")
    if home.is_dir():
        if not (home / DB_NAME).exists() and (foreign := _not_keepminds(home)):
            named = foreign[:3] + ([f"{len(foreign) - 3} more"] if len(foreign) > 3 else [])
            shown = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
            raise NoDataDir(f"{home} is not a Keepmind data dir: it holds {shown}, and no {DB_NAME}. Keepmind "
                            "keeps its data in a folder of its own (and makes everything in it owner-only): "
                            "check --home and KEEPMIND_HOME, or name a new or empty folder")
        return home
    if not create:
        raise NoDataDir(f"there is no Keepmind data dir at {home}: check --home and KEEPMIND_HOME (the "
                        f"default is {default_home()}); `keepmind serve` creates a new one")
    home.mkdir(parents=True, mode=0o700)
    print(f"created a new, empty data dir at {home}", file=sys.stderr)
    return home


def settings_path(home: Path) -> Path:
    """The data dir's settings file (keepmind.json)."""
    return Path(home) / SETTINGS_NAME


def load_home_settings(home: Path) -> Settings:
    return load_settings(settings_path(home))


def chosen_scope(args, settings: Settings) -> tuple[str, str]:
    """(audience, boundary) of a command's --audience and --boundary, else the agents' own
    (mcp.audience, mcp.boundary). An empty --boundary is a slip, not a request for the default."""
    if args.boundary is not None and not args.boundary.strip():
        raise InvalidInput("--boundary is empty: give a boundary name, or leave it out for "
                           f"{settings['mcp.boundary']!r}")
    return args.audience or settings["mcp.audience"], (args.boundary or settings["mcp.boundary"]).strip()


def home_option(parser: argparse.ArgumentParser) -> None:
    """Every command takes --home too (after the command name)."""
    parser.add_argument("--home", dest="home_sub", default=None, metavar="DIR",
                        help="data dir (default: $KEEPMIND_HOME, else the user data dir)")


def home_of(args, *, create: bool = False) -> Path:
    """The data dir a command acts on: its own --home, else the global one, else the default.
    It must exist unless `create` (see checked_home)."""
    return checked_home(resolve_home(getattr(args, "home_sub", None) or getattr(args, "home", None)),
                        create=create)


def models_dir_of(args, *, create: bool = False) -> Path:
    """The models folder of the command's data dir: its `memory.models_dir` setting, else <home>/models."""
    home = home_of(args, create=create)
    configured = load_home_settings(home).get("memory.models_dir")
    return Path(configured) if configured else home / "models"
