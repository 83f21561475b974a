"""The `keepmind` command line: a thin shell over the engine (each area registers its commands)."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from pathlib import Path

from keepmind.engine.errors import EngineError
from keepmind.engine.settings import load as load_settings

from .paths import resolve_home

# Each module exposes register(subparsers) and sets `func` on its parsers.
COMMAND_MODULES = (
    "keepmind.desktop.cmd_store",
    "keepmind.desktop.cmd_bench",
    "keepmind.desktop.cmd_models",
    "keepmind.desktop.cmd_doctor",
    "keepmind.desktop.cmd_serve",
    "keepmind.desktop.cmd_recall",
    "keepmind.desktop.cmd_prefeval",
    "keepmind.desktop.cmd_writepath",  # last: it joins an `eval` group another module may create
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="keepmind", description="Local long-term memory for LLM agents.")
    parser.add_argument("--home", help="data dir (default: $KEEPMIND_HOME, else the user data dir)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def home_option(parser: argparse.ArgumentParser) -> None:
    """Every command takes --home too (after the command name)."""
    parser.add_argument("--home", dest="home_sub", default=None,
                        help="data dir (default: $KEEPMIND_HOME, else the user data dir)")


def home_of(args) -> str | None:
    return getattr(args, "home_sub", None) or getattr(args, "home", None)


def models_dir_of(args) -> Path:
    """The models folder of the command's data dir: its `memory.models_dir` setting, else <home>/models."""
    home = resolve_home(home_of(args))
    configured = load_settings(home / "keepmind.json").get("memory.models_dir")
    return Path(configured) if configured else home / "models"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except EngineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
