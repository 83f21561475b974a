"""Recall commands: `keepmind eval locomo`, `keepmind recall calibrate`, `keepmind recall explain`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from keepmind.engine import open_engine
from keepmind.engine.errors import InvalidInput
from keepmind.engine.recall import calibrate as calib
from keepmind.engine.recall import metrics
from keepmind.engine.recall.eval_data import load_locomo, load_negatives
from keepmind.engine.recall.evaluation import EvalOptions, evaluate
from keepmind.engine.recall.gate import LEXICAL_CALIBRATION, lexical_calibration
from keepmind.engine.recall.pipeline import RecallConfig
from keepmind.engine.recall.rank import RANKINGS

from ..paths import home_of, home_option, load_home_settings, models_dir_of
from . import explain
from .numbers import fraction, non_negative, positive_int
from .quiet import quieted

DEV_DATA = Path("eval/locomo/locomo-dev.json")
DEV_NEGATIVES = Path("eval/negatives/cisi-queries.jsonl")
DEV_PREFEVAL = Path("eval/prefeval/prefeval-dev.jsonl")


def _subcommands(sub, name: str, help_text: str, dest: str):
    """The subcommand group `name`, shared with other modules that add to it (e.g. `eval`)."""
    parser = sub.choices.get(name) or sub.add_parser(name, help=help_text)
    if parser._subparsers is not None:
        return parser._subparsers._group_actions[0]
    return parser.add_subparsers(dest=dest, metavar=name.upper(), required=True)


def _data_args(p, *, data_required: bool) -> None:
    home_option(p)
    p.add_argument("--data", required=data_required,
                   help="a LoCoMo JSON file (the public locomo10.json, or ../shared/eval/locomo/locomo-dev.json)")
    p.add_argument("--negatives", nargs="*", default=None, metavar="FILE",
                   help="JSON Lines negative queries {id, query, source}; each is asked against every store")
    p.add_argument("--mode", choices=("facts", "turns"), default="facts")
    p.add_argument("--anonymize", action="store_true", help="replace the speakers' names with User and Friend")
    p.add_argument("--json", dest="json_out", help="write the results as JSON to this file")


def register(sub) -> None:
    group = _subcommands(sub, "eval", "evaluation commands that print numbers", "eval_command")
    p = group.add_parser("locomo", help="recall quality on LoCoMo: retrieval, gate and latency")
    _data_args(p, data_required=True)
    p.add_argument("--baseline", action="store_true",
                   help="also rank by raw cosine and raw BM25, and run the cosine-floor-only gate tuned "
                        "to the same retention")
    p.add_argument("--compare-rankings", action="store_true",
                   help=f"retrieval of every ranking ({', '.join(RANKINGS)}) over the same candidates")
    p.add_argument("--ranking", choices=RANKINGS, help="rank with this instead of the shipped ranking")
    p.add_argument("--gate", choices=("shipped", "floor-only"), default="shipped",
                   help="floor-only: the cosine floor alone decides (use with --floor)")
    p.add_argument("--floor", type=float, help="cosine floor for this run instead of the calibrated one")
    p.add_argument("--lexical", action="store_true",
                   help="recall without a query vector, as it degrades when the embedder is missing or "
                        "misses its budget")
    p.set_defaults(func=cmd_eval_locomo)

    group = _subcommands(sub, "recall", "recall calibration and receipts", "recall_command")
    p = group.add_parser("calibrate", help="pick the ranking's coverage weight, the cosine floor and the offline "
                                           "gate's weights and thresholds on dev data; write them into the "
                                           "model's manifest")
    _data_args(p, data_required=False)
    p.add_argument("--target-retention", type=fraction, default=0.96,
                   help="relevant_recall_retained the gate must keep on the dev data (default 0.96)")
    p.add_argument("--coverage-weight", type=non_negative, default=None,
                   help="the hybrid ranking's coverage weight instead of the sweep's pick (recorded as "
                        "chosen by hand, next to the sweep)")
    p.add_argument("--note", help="a remark recorded with this calibration (e.g. why a value was chosen by hand)")
    p.add_argument("--dry-run", action="store_true", help="print the calibration, do not write the manifest")
    p.add_argument("--feedback", action="store_true",
                   help="also learn from the labels people set on recall receipts in the browser (\"don't inject "
                        "this here\", \"this should have been recalled\") in --home's store")
    p.add_argument("--lexical", action="store_true",
                   help="calibrate the lexical gate (recall without a query vector) instead, and write it into "
                        "the engine's engine/recall/lexical_gate.json")
    p.add_argument("--prefeval", metavar="FILE",
                   help="PrefEval pairs (JSON Lines {id, topic, preference, question}): task messages that need a "
                        "stated preference join the calibration with a target of their own (default without "
                        "--data: ../shared/eval/prefeval/prefeval-dev.jsonl)")
    p.add_argument("--prefeval-users", type=positive_int, default=12, help="simulated PrefEval users (default 12)")
    p.add_argument("--prefeval-seed", type=int, default=0, help="the PrefEval users' seed (default 0)")
    p.add_argument("--target-zero-injection", type=fraction, default=0.90,
                   help="share of PrefEval questions whose topic the store lacks that must inject nothing "
                        "(default 0.90)")
    p.set_defaults(func=cmd_calibrate, anonymize_default=True)

    explain.register(group)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def repository() -> Path:
    """The development checkout this module runs from (desktop/commands/recall.py is two down)."""
    return Path(__file__).resolve().parents[2]


def _shared_eval() -> Path | None:
    """../shared/eval next to the repository (how the dev data is found without --data)."""
    found = repository().parent / "shared"
    return found if found.is_dir() else None


def _inputs(args):
    data = args.data
    negatives = args.negatives
    shared = _shared_eval()
    if data is None:
        if shared is None:
            raise InvalidInput("no --data given and no ../shared/eval next to the repository")
        data = shared / DEV_DATA
        if negatives is None:
            negatives = [str(shared / DEV_NEGATIVES)]
    convs = load_locomo(data, anonymize=args.anonymize)
    negs = [q for path in negatives or [] for q in load_negatives(path)]
    return Path(data), convs, negs


def _run(args, *, calibrating: bool, config: RecallConfig | None):
    data, convs, negs = _inputs(args)
    models_dir = models_dir_of(args)
    if not models_dir.is_dir():
        _say(f"no models folder at {models_dir}: recall runs lexical-only "
             "(install one with `keepmind models install-offline`)")
    options = EvalOptions(mode=args.mode, anonymize=args.anonymize)
    started = time.time()
    with quieted("keepmind.recall", args):  # thousands of recalls: degradation is counted in the JSON
        records = evaluate(convs, negs, options, open_engine=open_engine, models_dir=models_dir, config=config,
                           calibrating=calibrating, progress=_say if getattr(args, "verbose", False) else None)
    return data, convs, negs, records, time.time() - started


def _config_for(args) -> RecallConfig | None:
    config = RecallConfig()
    if args.ranking:
        config = RecallConfig(ranking=args.ranking)
    if args.floor is not None:
        config = RecallConfig(ranking=config.ranking, floor=args.floor)
    if args.gate == "floor-only":
        config = RecallConfig(ranking=config.ranking, floor=config.floor, gate_enabled=False)
    if getattr(args, "lexical", False):
        config = replace(config, embeddings_enabled=False)
    return config


def cmd_eval_locomo(args) -> int:
    config = _config_for(args)
    data, convs, negs, records, seconds = _run(args, calibrating=False, config=config)
    summary = metrics.summarize(records, baseline=args.baseline, compare_rankings=args.compare_rankings,
                                now=int(time.time() * 1000), config={
        "data": data.name, "negatives": [Path(n).name for n in (args.negatives or [])], "mode": args.mode,
        "anonymize": args.anonymize, "ranking": config.ranking, "gate": args.gate, "floor_override": args.floor,
        "lexical": bool(getattr(args, "lexical", False)),
        "conversations": len(convs), "skipped_questions": sum(c.skipped_questions for c in convs),
        "negative_queries": len(negs), "seconds": round(seconds, 1),
        "recall_modes": sorted({r.mode for r in records if getattr(r, "mode", None)}),
        "model_id": next((r.model_id for r in records if r.model_id), None),
        "floor": next((r.floor for r in records if r.floor is not None), None),
        "coverage_weight": next((r.coverage_weight for r in records if r.coverage_weight is not None), None)})
    _print_summary(summary)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


def _print_summary(s: dict) -> None:
    r = s["retrieval"]
    print(f"retrieval ({s['config']['ranking']}): recall@1 {r['recall@1']:.3f}  recall@5 {r['recall@5']:.3f}  "
          f"recall@10 {r['recall@10']:.3f}  MRR {r['mrr']:.3f}  (n={r['n']})")
    for name, b in (s.get("baselines") or {}).items():
        if "mrr" in b:
            print(f"  baseline {name}: recall@5 {b['recall@5']:.3f}  MRR {b['mrr']:.3f}")
    for name, b in (s.get("rankings") or {}).items():
        print(f"  ranking {name}: recall@5 {b['recall@5']:.3f}  MRR {b['mrr']:.3f}")
    g = s["gate"]
    zero = "  ".join(f"{k} {v:.3f}" for k, v in g["zero_injection"].items())
    print(f"gate: retained {g['relevant_recall_retained']:.3f}  hit rate {g['hit_rate']:.3f}  "
          f"precision {g['precision']:.3f}  injected +{g['mean_injected_positive']:.2f} "
          f"-{g['mean_injected_negative']:.2f}  zero-injection: {zero}")
    fo = (s.get("baselines") or {}).get("floor_only_gate")
    if fo and fo.get("floor") is not None:
        zero = "  ".join(f"{k} {v:.3f}" for k, v in fo["zero_injection"].items())
        print(f"  cosine-floor-only gate at the same retention (floor {fo['floor']:.3f}): retained "
              f"{fo['relevant_recall_retained']:.3f}  precision {fo['precision']:.3f}  zero-injection: {zero}")
    lat = s["latency_ms"]
    print(f"latency: p50 {lat['p50']:.1f} ms  p95 {lat['p95']:.1f} ms (numbers are noisy on a shared machine)")
    if s.get("degraded"):
        print(f"degraded: {s['degraded']}")


def cmd_calibrate(args) -> int:
    if args.data is None and not args.anonymize:
        args.anonymize = True  # the dev default: gate figures only mean something anonymized
    # No time budget while calibrating: a query embedded slowly on a busy machine must not turn
    # into a lexical-only record and skew the weights.
    relaxed = RecallConfig(timeout_ms=60_000, embed_budget_ms=30_000, gate_budget_ms=30_000)
    if args.lexical:
        return _calibrate_lexical(args, replace(relaxed, embeddings_enabled=False))
    data, convs, negs, records, seconds = _run(args, calibrating=True, config=relaxed)
    tasks, task_null, task_note = _task_records(args, relaxed)
    named = None
    if args.anonymize:  # the ranking weight is swept with the names intact (see calibrate.calibrate)
        _, _, _, named, more = _run(argparse.Namespace(**{**vars(args), "anonymize": False}), calibrating=True,
                                    config=relaxed)
        seconds += more
    _need_negatives(records)
    model_id = next((r.model_id for r in records if r.model_id), None)
    if model_id is None:
        raise InvalidInput("no embedding model was loaded, so there is nothing to calibrate: install one "
                           "(`keepmind models install-offline`) or pass --home with a models folder")
    if args.feedback:
        records = records + _feedback_records(args, model_id, relaxed)
    result = calib.calibrate(records, target_retention=args.target_retention, coverage_weight=args.coverage_weight,
                             ranking_records=named, task_records=tasks, zero_target=args.target_zero_injection,
                             task_null=task_null)
    describe = _describe(data, args, convs, negs,
                         ("; ranking weight swept on the same data with names intact" if named else "")
                         + ("; with people's feedback labels" if args.feedback else "") + task_note)
    from keepmind.engine.models import manifest as manifests

    current = manifests.find(models_dir_of(args), model_id)
    cal = result.as_manifest(current.calibration if current else {}, describe, note=args.note)
    _show(cal, args)
    if not args.dry_run:
        path = manifests.save_calibration(model_id, cal, models_dir_of(args))
        _say(f"wrote the calibration of {model_id} into {path.name}")
    return 0


def _feedback_records(args, model_id: str, config: RecallConfig) -> list:
    """People's labels on receipts in --home, asked again of that store with `model_id` (the model
    being calibrated), as extra records: engine/recall/feedback.py says how they count."""
    from keepmind.engine.recall import feedback

    home = home_of(args)
    settings = load_home_settings(home).with_overrides(
        memory__embeddings__model_id=model_id, memory__models_dir=str(models_dir_of(args)),
        memory__embeddings__auto_download=False)
    with open_engine(home, settings=settings, start_workers=False) as engine:
        engine.models.load(download=False, repair=False)
        found = feedback.records(engine, config=config, model_id=model_id, say=_say)
    _say(f"feedback: {len(found)} labelled recalls added ({sum(r.kind == 'positive' for r in found)} "
         "that should have recalled a memory, the rest that should have injected nothing)")
    return found


def _task_records(args, config: RecallConfig, *, null: bool = True):
    """PrefEval's calibrating records (task messages needing a preference) and the cosines of its
    questions to preferences of other topics (prefeval.unrelated_null), or (None, None, "")."""
    path = getattr(args, "prefeval", None)
    shared = _shared_eval()
    if path is None and args.data is None and shared is not None and (shared / DEV_PREFEVAL).is_file():
        path = str(shared / DEV_PREFEVAL)
    if path is None:
        return None, None, ""
    from keepmind.engine.recall import prefeval

    pairs = prefeval.load_prefeval(path)
    background = load_locomo(args.data or shared / DEV_DATA, anonymize=True) if (args.data or shared) else []
    protocol = prefeval.Protocol(users=args.prefeval_users, seed=args.prefeval_seed)
    records, _, _ = prefeval.evaluate(pairs, background, protocol, open_engine=open_engine,
                                      models_dir=models_dir_of(args), config=config, calibrating=True)
    found = prefeval.measure_null(pairs, open_engine=open_engine, models_dir=models_dir_of(args)) if null else None
    topics = len({p.topic for p in pairs})
    return records, found, (f"; with {Path(path).name}: {protocol.users} simulated users (seed {protocol.seed}), "
                     f"{topics} topics, {sum(r.kind == 'positive' for r in records)} task questions needing a "
                     f"preference, {sum(r.kind != 'positive' for r in records)} whose topic the store lacks")


def _describe(data: Path, args, convs, negs, more: str = "") -> str:
    """What a calibration was fitted on, as recorded with it."""
    return (f"{data.name} ({args.mode} mode{', anonymized' if args.anonymize else ''}; "
            f"{len(convs)} conversations, {sum(len(c.questions) for c in convs)} questions, "
            f"{len(negs)} negative queries{more})")


def _need_negatives(records) -> None:
    if not any(r.kind != "positive" for r in records):
        raise InvalidInput("calibration needs negatives: more than one conversation, or --negatives files")


def _show(cal: dict, args) -> None:
    """Print a calibration, and write it to --json when asked."""
    print(json.dumps(cal, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(cal, indent=2) + "\n", encoding="utf-8")


def _calibrate_lexical(args, config: RecallConfig) -> int:
    data, convs, negs, records, _ = _run(args, calibrating=True, config=config)
    _need_negatives(records)
    tasks, _, task_note = _task_records(args, config, null=False)
    cal = calib.calibrate_lexical(records, target_retention=args.target_retention, task_records=tasks,
                                  zero_target=args.target_zero_injection)
    cal.update({"data": _describe(data, args, convs, negs, task_note),
                "date": time.strftime("%Y-%m-%d", time.gmtime())})
    if args.note:
        cal["note"] = args.note
    _show(cal, args)
    if not args.dry_run:
        LEXICAL_CALIBRATION.write_text(json.dumps(cal, indent=2) + "\n", encoding="utf-8")
        lexical_calibration.cache_clear()
        _say(f"wrote the lexical gate's calibration into {LEXICAL_CALIBRATION.name}")
    return 0



