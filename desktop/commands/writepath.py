"""Write-path commands: `keepmind checkpoints list|retry|discard|drain` and `keepmind eval extractor`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keepmind.engine import open_engine
from keepmind.engine.clock import iso
from keepmind.engine.errors import InvalidInput
from keepmind.engine.writepath import extractor_eval, graph_eval

from ..paths import home_of, home_option, load_home_settings
from .numbers import count, positive_int
from .terminal import for_terminal, json_for_terminal, one_line


def llm_api_key(settings, environ=os.environ) -> str | None:
    """The provider key from the environment variable `memory.llm.api_key_env` names (or None)."""
    name = settings.get("memory.llm.api_key_env")
    return environ.get(name) if name else None


def _subcommands(sub, name: str, help_text: str, dest: str):
    """The subcommand group `name`, shared with other modules that add to it (e.g. `eval`)."""
    parser = sub.choices.get(name) or sub.add_parser(name, help=help_text)
    if parser._subparsers is not None:  # another module created the group first
        return parser._subparsers._group_actions[0]
    return parser.add_subparsers(dest=dest, metavar=name.upper(), required=True)


def register(sub) -> None:
    group = _subcommands(sub, "checkpoints", "the durable checkpoint queue", "checkpoints_command")
    p = group.add_parser("list", help="checkpoints by state, dead letters first")
    home_option(p)
    p.add_argument("--status", choices=("pending", "leased", "completed", "dead", "review", "discarded"))
    p.add_argument("--limit", type=positive_int, default=50, help="at most this many (default 50)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_list)
    p = group.add_parser("retry", help="send a dead letter back to the queue (or try a failed one now)")
    home_option(p)
    p.add_argument("checkpoint_id")
    p.set_defaults(func=cmd_retry)
    p = group.add_parser("discard", help="drop a waiting, failed, dead or in-review checkpoint: it is never curated")
    home_option(p)
    p.add_argument("checkpoint_id")
    p.set_defaults(func=cmd_discard)
    p = group.add_parser("drain", help="curate every available checkpoint now, in this process")
    home_option(p)
    p.set_defaults(func=cmd_drain)

    group = _subcommands(sub, "eval", "evaluation commands that print numbers", "eval_command")
    p = group.add_parser("extractor", help="precision and recall of the rule-based extractor on LoCoMo "
                                           "observation facts")
    p.add_argument("--data", required=True, help="a LoCoMo JSON file, e.g. ../shared/eval/locomo/locomo-dev.json")
    p.add_argument("--threshold", type=float, default=extractor_eval.DEFAULT_THRESHOLD,
                   help="Dice overlap of content tokens that counts as a match (default 0.4)")
    p.add_argument("--json", dest="json_out", help="also write the numbers to this JSON file")
    p.set_defaults(func=cmd_eval_extractor)

    p = group.add_parser("graph", help="the knowledge graph the rule-based write path builds from LoCoMo "
                                       "conversations said turn by turn: anchors by type, edges by relation")
    p.add_argument("--data", required=True, help="a LoCoMo JSON file, e.g. ../shared/eval/locomo/locomo-dev.json")
    p.add_argument("--examples", type=count, default=20, help="examples of anchors and of edges to show (default 20)")
    p.add_argument("--json", dest="json_out", help="also write the report to this JSON file")
    p.set_defaults(func=cmd_eval_graph)


def _open(args, start_workers=False):
    home = home_of(args)
    settings = load_home_settings(home)
    return open_engine(home, settings=settings, start_workers=start_workers,
                       llm_api_key=llm_api_key(settings))


def cmd_list(args) -> int:
    with _open(args) as engine:
        found = engine.checkpoints(args.status, args.limit)
        counts = engine.checkpoint_overview()["counts"]
    if args.json:
        print(json_for_terminal({"counts": counts, "checkpoints": found}, indent=2))
        return 0
    print("  ".join(f"{k}: {v}" for k, v in counts.items()))
    for c in found:
        line = (f"{c['checkpoint_id']}  {c['status']:<9} p{c['priority']:<3} {c['trigger_type']:<26}"
                f" attempts={c['attempts']}  created={iso(c['created_at'])}")
        if c["last_error"]:
            line += f"\n    last error: {one_line(c['last_error'])}"
        print(line)
    return 0


def cmd_retry(args) -> int:
    with _open(args) as engine:
        engine.retry_checkpoint(args.checkpoint_id)
    print(f"{args.checkpoint_id} is pending again")
    return 0


def cmd_discard(args) -> int:
    with _open(args) as engine:
        engine.discard_checkpoint(args.checkpoint_id)
    print(f"{args.checkpoint_id} is discarded: it will not be curated")
    return 0


def cmd_drain(args) -> int:
    with _open(args) as engine:
        outcomes = engine.drain_checkpoints()
    for o in outcomes:
        print(f"{o.checkpoint_id}  {o.status}  {o.action or ''}  {one_line(o.reason or '')}".rstrip())
    print(f"{len(outcomes)} checkpoints handled")
    return 0


def cmd_eval_extractor(args) -> int:
    path = Path(args.data)
    if not path.is_file():
        raise InvalidInput(f"no file {path}: pass a LoCoMo JSON file, e.g. ../shared/eval/locomo/locomo-dev.json")
    if not 0 < args.threshold <= 1:
        raise InvalidInput("--threshold must be in (0, 1]")
    try:
        samples = extractor_eval.load(path)
        ours = extractor_eval.evaluate(samples, args.threshold, "rules")
        baseline = extractor_eval.evaluate(samples, args.threshold, "netclaw")
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{path} is not LoCoMo-shaped JSON ({type(exc).__name__}: {exc})") from None
    print(f"match: Dice of content tokens >= {args.threshold} against the observation facts of the same turn")
    print(f"conversations: {ours.conversations}  gold facts: {ours.gold}")
    for name, r in (("rules (keepmind)", ours), ("netclaw retired rules", baseline)):
        print(f"{name:<22} precision {r.precision:.3f}  recall {r.recall:.3f}  f1 {r.f1:.3f}"
              f"  statements {r.statements}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"rules": ours.as_dict(), "netclaw_baseline": baseline.as_dict()},
                                                  indent=2) + "\n", encoding="utf-8")
    return 0


def cmd_eval_graph(args) -> int:
    path = Path(args.data)
    if not path.is_file():
        raise InvalidInput(f"no file {path}: pass a LoCoMo JSON file, e.g. ../shared/eval/locomo/locomo-dev.json")
    try:
        samples = extractor_eval.load(path)
        found = graph_eval.report(samples, open_engine=open_engine, examples=args.examples)
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{path} is not LoCoMo-shaped JSON ({type(exc).__name__}: {exc})") from None
    print(f"{found['stores']} stores (one per speaker), {found['anchors']} anchors, {found['edges']} edges "
          f"({found['closed_edges']} closed by a newer value)")
    print("anchors by type: " + ", ".join(f"{k} {v}" for k, v in found["anchors_by_type"].items()))
    print("edges by relation: " + ", ".join(f"{k} {v}" for k, v in found["edges_by_relation"].items()))
    print("anchors:")
    for a in found["anchor_examples"]:
        print(for_terminal(f"  {a['name']} ({a['type']})  [{a['store']}]"))
    print("edges:")
    for e in found["edge_examples"]:
        print(for_terminal(f"  {e['source']} -{e['relation']}-> {e['target']} ({e['target_type']})"
                           f"{'' if e['open'] else ' [closed]'}  [{e['store']}]"))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    return 0
