"""Store commands: stats and export (import: imports.py)."""

from __future__ import annotations

import json
import sys

from keepmind.engine import open_engine
from keepmind.engine.transfer import carried_said
from keepmind.engine.wording import counted

from ..paths import home_of, home_option


def register(sub) -> None:
    p = sub.add_parser("stats", help="counts of anchors, documents, records, edges, pending checkpoints")
    home_option(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("export", help="write every memory as JSON Lines (lossless) or readable Markdown")
    home_option(p)
    p.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl")
    p.add_argument("-o", "--output", required=True, metavar="PATH",
                   help="jsonl: the file to write; markdown: one file when PATH ends in .md, else a folder "
                        "with one file per anchor")
    p.add_argument("--with-history", action="store_true",
                   help="markdown: also write each document's earlier revisions (a corrected memory's old, "
                        "wrong text included); JSON Lines always keeps them")
    p.set_defaults(func=cmd_export)



def cmd_stats(args) -> int:
    """The running Keepmind's numbers when one answers (formed and recalled since *it* started),
    else the store's counts alone: this process's own start would make "since start" meaningless."""
    from keepmind.engine import EngineError

    from ..process.client import DaemonClient

    home = home_of(args)
    stats, running = None, None
    client = DaemonClient.from_home(home)
    if client is not None:
        try:
            stats, running = client.get("/stats")["stats"], client.url
        except EngineError:
            stats = None
        finally:
            client.close()
    if stats is None:
        with open_engine(home, start_workers=False) as engine:
            stats = engine.stats()
        for key in ("formed_since_start", "recalled_since_start"):
            stats.pop(key, None)
    if args.json:
        print(json.dumps({**stats, "running": running}, indent=2))
        return 0
    for key in ("anchors", "documents", "records", "edges", "pending_checkpoints", "formed_since_start",
                "recalled_since_start"):
        if key in stats:
            print(f"{key.replace('_', ' ')}: {stats[key]}")
    if running is None:
        print("(no Keepmind is running for this data dir: formed and recalled since start are not known)")
    return 0


def cmd_export(args) -> int:
    if args.with_history and args.format != "markdown":
        print("--with-history is for --format markdown: JSON Lines always keeps earlier revisions", file=sys.stderr)
        return 2
    with open_engine(home_of(args), start_workers=False) as engine:
        done = engine.export(args.output, fmt=args.format, history=args.with_history)
    also = carried_said(done.deleted, done.earlier) if args.format == "jsonl" else ""
    where = f"{done.path}" + ("" if done.single_file else " (a folder: one file per anchor)")
    print(f"exported {counted(done.memories, 'memory')} to {where}" + (f" ({also})" if also else ""))
    if done.made_folder is not None:
        print(f"(the folder {done.made_folder} did not exist: it was made for this export)")
    return 0
