"""`keepmind eval scenarios`: recall on hand-written users' stores and the messages agents send."""

from __future__ import annotations

import json
import time
from pathlib import Path

from keepmind.engine import open_engine
from keepmind.engine.errors import InvalidInput
from keepmind.engine.recall import scenarios

from ..paths import home_option, models_dir_of
from .quiet import quieted
from .recall import _subcommands, repository

SCENARIOS = Path("eval/scenarios")


def register(sub) -> None:
    group = _subcommands(sub, "eval", "evaluation commands that print numbers", "eval_command")
    p = group.add_parser("scenarios", help="recall on hand-written users: tasks, coding prompts, questions, "
                                           "small talk, against stores as agents fill them")
    home_option(p)
    p.add_argument("--data", nargs="+", metavar="FILE",
                   help="scenario files (default in the development checkout: eval/scenarios/dev.json and "
                        "test.json, reported apart)")
    p.add_argument("--show-wrong", action="store_true",
                   help="list every message whose outcome was wrong: what it needed, got and ranked first")
    p.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    p.set_defaults(func=cmd_eval_scenarios)


def cmd_eval_scenarios(args) -> int:
    files = [Path(f) for f in args.data] if args.data else sorted((repository() / SCENARIOS).glob("*.json"))
    if not files:
        raise InvalidInput("no --data given and no eval/scenarios/*.json in this checkout")
    out = {}
    for path in files:
        users = scenarios.load_scenarios(path)
        started = time.time()
        with quieted("keepmind.recall", args):
            records = scenarios.evaluate(users, open_engine=open_engine, models_dir=models_dir_of(args))
        out[path.stem] = summary = scenarios.summarize(records, users, config={
            "data": path.name, "users": len(users), "seconds": round(time.time() - started, 1),
            "model_id": next((r.model_id for r in records if r.model_id), None),
            "recall_modes": sorted({r.mode for r in records if r.mode})})
        print_summary(path.stem, summary, show_wrong=args.show_wrong)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


def print_summary(name: str, s: dict, *, show_wrong: bool = False) -> None:
    print(f"{name}: needed memory injected {s['needed_injected']:.3f}  in top 3 (before floor and gate) "
          f"{s['needed_in_top3']:.3f}  precision {s['precision']:.3f}  zero-injection {s['zero_injection']:.3f}  "
          f"({s['n_positive']} messages needing a memory, {s['n_negative']} needing none; "
          f"{s['config']['users']} users, {s['config']['model_id'] or 'no embedding model'})")
    print(f"  mean injected: {s['mean_injected_positive']:.2f} when a memory is needed, "
          f"{s['mean_injected_negative']:.2f} when none is; latency p50 {s['latency_ms']['p50']} ms, "
          f"p95 {s['latency_ms']['p95']} ms")
    if s["degraded"]:
        print(f"  degraded: {s['degraded']}")
    if show_wrong:
        for w in s["wrong"]:
            print(f"  [{w['user']}] {w['message']}\n    needed {w['needed'] or 'nothing'}\n"
                  f"    injected {w['injected'] or 'nothing'}\n    top 3 {w['top3']}")
