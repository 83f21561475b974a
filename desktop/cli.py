"""The `keepmind` command line: a thin shell over the engine (each area registers its commands)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback

from keepmind import version
from keepmind.engine import EngineError

from .commands import (
    autostart,
    bench,
    doctor,
    imports,
    lifecycle,
    memories,
    models,
    pause,
    prefeval,
    recall,
    scenarios,
    serve,
    store,
    ui,
    writepath,
)
from .commands.failures import STORE_ERRORS, failure_line

# Each module exposes register(subparsers) and sets `func` on its parsers.
COMMANDS = (store, imports, memories, bench, models, doctor, serve, lifecycle, ui, pause, autostart, recall,
            prefeval, scenarios, writepath)  # writepath last: it joins an `eval` group another module may create


# The commands that keep running and whose stderr is a log (serve.log, an MCP client's log); None: the tray.
LONG_RUNNING = frozenset({"serve", "mcp", None})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="keepmind", description="Local long-term memory for LLM agents. Without a command: the tray app "
                                     "(one per data dir; without a display it runs as `keepmind serve`).")
    parser.add_argument("--home", metavar="DIR", help="data dir (default: $KEEPMIND_HOME, else the user data dir)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    parser.add_argument("--version", action="version", version=f"keepmind {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # stderr shows warnings (everything with -v); serve and the tray also log INFO to a file, so the
    # level sits on the handler, not on the loggers.
    stderr = logging.StreamHandler()
    stderr.setLevel(logging.INFO if args.verbose else logging.WARNING)
    if not args.verbose and args.command not in LONG_RUNNING:
        # SQLite's own log lines (a damaged file, a WAL recovered) say again, in its words, what the
        # command's one-line error says; -v shows them, and serve and mcp, whose stderr is a log, keep them.
        stderr.addFilter(lambda record: not hasattr(record, "sqlite_code"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[stderr],
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    func = getattr(args, "func", None)
    if func is None:  # `keepmind` alone is the desktop program: the tray (or serve without a display)
        from .commands.tray import cmd_tray

        func = cmd_tray
    try:
        return int(func(args) or 0)
    except EngineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`keepmind ... | head`): stop quietly, as other command-line tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except STORE_ERRORS as exc:
        # The disk or a file said no (read-only, not a folder, a damaged keepmind.db): one line on
        # which file and what to do. Anything else is a bug and keeps its traceback.
        if args.verbose:
            traceback.print_exc()
        print(f"error: {failure_line(exc, args)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
