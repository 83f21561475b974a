"""`keepmind eval prefeval`: recall for task questions that need the user's stated preferences."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from keepmind.engine import open_engine
from keepmind.engine.errors import InvalidInput
from keepmind.engine.recall import prefeval
from keepmind.engine.recall.eval_data import load_locomo

from ..paths import home_option, models_dir_of
from .numbers import positive_int
from .quiet import quieted
from .recall import DEV_DATA, DEV_PREFEVAL, _shared_eval, _subcommands


def register(sub) -> None:
    group = _subcommands(sub, "eval", "evaluation commands that print numbers", "eval_command")
    p = group.add_parser("prefeval", help="recall on PrefEval: task questions that need a stated preference")
    home_option(p)
    p.add_argument("--data", help="PrefEval pairs as JSON Lines {id, topic, preference, question} "
                                  "(default in the development checkout: ../shared/eval/prefeval/prefeval-dev.jsonl)")
    p.add_argument("--background", help="a LoCoMo JSON file whose facts fill each user's store "
                                        "(default in the development checkout: the LoCoMo dev file, also with --data)")
    p.add_argument("--no-background", action="store_true",
                   help="no background facts: each user's store holds only their preferences")
    p.add_argument("--users", type=positive_int, default=12, help="simulated users (default 12)")
    p.add_argument("--seed", type=int, default=0, help="the seed every user's draw derives from (default 0)")
    p.add_argument("--end-to-end", action="store_true",
                   help="say each preference as a user turn and let the observer (no LLM) learn it")
    p.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    p.set_defaults(func=cmd_eval_prefeval)


def inputs(data: str | None, background: str | None, *, no_background: bool = False):
    """The pairs and the background conversations (the dev files by default, inside the checkout)."""
    shared = _shared_eval()
    if data is None:
        if shared is None:
            raise InvalidInput("no --data given and no ../shared/eval next to the repository")
        data = str(shared / DEV_PREFEVAL)
    if background is None and shared is not None and not no_background:  # the protocol's background, with any --data
        background = str(shared / DEV_DATA)
    pairs = prefeval.load_prefeval(data)
    convs = load_locomo(background, anonymize=True) if background else []
    return Path(data), pairs, convs, (Path(background).name if background else None)


def cmd_eval_prefeval(args) -> int:
    if args.no_background and args.background:
        raise InvalidInput("--background and --no-background contradict each other: give one")
    data, pairs, convs, background = inputs(args.data, args.background, no_background=args.no_background)
    if not convs:
        print("no --background: each user's store holds only their preferences", file=sys.stderr)
    protocol = prefeval.Protocol(users=args.users, seed=args.seed, end_to_end=args.end_to_end)
    started = time.time()
    with quieted("keepmind.recall", args):
        records, learnt, _ = prefeval.evaluate(pairs, convs, protocol, open_engine=open_engine,
                                               models_dir=models_dir_of(args))
    summary = prefeval.summarize(records, learnt=learnt, keeps_words=prefeval.keeps_content_words,
                                 pairs={p.pid: p for p in pairs}, config={
        "data": data.name, "background": background, "users": args.users, "seed": args.seed,
        "end_to_end": args.end_to_end, "topics": len({p.topic for p in pairs}),
        "seconds": round(time.time() - started, 1),
        "model_id": next((r.model_id for r in records if r.model_id), None),
        "recall_modes": sorted({r.mode for r in records if r.mode})})
    print_summary(summary)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


def print_summary(s: dict) -> None:
    print(f"preference injected {s['preference_injected']:.3f}  in top 3 (before floor and gate) "
          f"{s['preference_in_top3']:.3f}  precision {s['precision']:.3f}  zero-injection on absent topics "
          f"{s['zero_injection']:.3f}")
    print(f"injected per question: positives {s['mean_injected_positive']:.2f}  negatives "
          f"{s['mean_injected_negative']:.2f}  (n={s['n_positive']} positives, {s['n_negative']} negatives)")
    kinds = s.get("injected_kinds")
    if kinds:
        pos, neg = kinds["positive"], kinds["negative"]
        other = pos["other"] + neg["other"]
        print(f"what was injected: for positives {pos['needed']} needed, {pos['same_topic_preference']} another "
              f"preference of the topic, {pos['other_topic_preference']} of another topic, {pos['background']} "
              f"background; for negatives {neg['other_topic_preference']} preferences of a present topic, "
              f"{neg['background']} background" + (f"; {other} other" if other else ""))
    learnt = s.get("learnt")
    if learnt:
        kept = learnt["kept_content_words"]
        print(f"learnt: {learnt['became_memory']:.3f} of {learnt['preferences']} preferences became a memory"
              + (f", {kept:.3f} keeping every content word" if kept is not None else ""))
    lat = s["latency_ms"]
    print(f"latency: p50 {lat['p50']:.1f} ms  p95 {lat['p95']:.1f} ms (noisy on a shared machine)")
    if s.get("degraded"):
        print(f"degraded: {s['degraded']}")
