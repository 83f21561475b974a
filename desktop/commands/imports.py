"""`keepmind import PATH`: a Keepmind JSON Lines export, or OpenClaw-style Markdown memory (or
Keepmind's own Markdown export), a file, a folder or a zip of either (unpacked with the browser
upload's checks: engine/transfer.py `unzip`).

Markdown lands where the agents look: `--audience`/`--boundary`, else `mcp.audience`/`mcp.boundary`
in keepmind.json (the scope the hook and the MCP server use). Its units of meaning are queued for
curation; when a Keepmind runs for the data dir its curation worker takes them (and embeds what it
keeps), and this command waits for it and prints what was kept, merged and skipped, and why.
When none runs, this process loads the embedding model (never downloading), curates and embeds
itself. JSON Lines rows are written as they are; a running Keepmind notices them and embeds them
within seconds, or this process embeds them.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from keepmind.engine import EngineError, InvalidInput, open_engine
from keepmind.engine.transfer import carried_said
from keepmind.engine.wording import counted

from ..paths import chosen_scope, home_of, home_option, load_home_settings
from .failures import STORE_ERRORS, failure_line
from .quiet import quieted
from .terminal import for_terminal, json_for_terminal

WAIT_REPORT_S = 5.0
EMBED_WAIT_S = 20.0
STALL_S = 60.0


def register(sub) -> None:
    p = sub.add_parser("import", help="read a Keepmind JSON Lines export, or OpenClaw-style Markdown memory "
                                      "(a workspace folder with MEMORY.md and memory/YYYY-MM-DD.md, or one file), "
                                      "or Keepmind's Markdown export; a .zip of any of them too")
    home_option(p)
    p.add_argument("path", metavar="PATH")
    p.add_argument("--audience", choices=("personal", "team"), default=None,
                   help="audience of Markdown memories (default: mcp.audience in keepmind.json, personal)")
    p.add_argument("--boundary", default=None,
                   help="boundary of Markdown memories (default: mcp.boundary in keepmind.json, 'default'), "
                        "the one your agents' sessions use; Keepmind's own Markdown export goes back to the "
                        "one audience and boundary its memories name unless --audience or --boundary is given")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_import)


def _running(home: Path) -> str | None:
    """The url of the Keepmind running for `home` (proved to be it), or None."""
    from ..process.client import DaemonClient

    client = DaemonClient.from_home(home)
    if client is None:
        return None
    try:
        return client.url if client.healthy() else None
    finally:
        client.close()


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _curated_by_server(engine, home: Path, where: dict[str, str], url: str) -> dict:
    """Wait while the running Keepmind curates the queued units; if it goes away, curate here; if it
    makes no progress for STALL_S (memory turned off), leave them queued and say so."""
    started = last = moved = time.monotonic()
    waiting = len(where)
    while True:
        outcome = engine.import_outcome(where)
        if outcome["done"]:
            return outcome
        if outcome["counts"]["waiting"] < waiting:
            waiting, moved = outcome["counts"]["waiting"], time.monotonic()
        elif time.monotonic() - moved > STALL_S:
            return outcome
        if time.monotonic() - last >= WAIT_REPORT_S:
            last = time.monotonic()
            _say(f"the Keepmind at {url} is curating: {len(where) - outcome['counts']['waiting']} of {len(where)} "
                 f"done ({time.monotonic() - started:.0f} s)")
            if _running(home) is None:
                _say("it stopped: curating the rest here")
                return _curated_here(engine, where)
        time.sleep(0.3)


def _embedded_by_server(engine, url: str, ids: list[str], wait_s: float = EMBED_WAIT_S) -> str:
    """Wait a little for the running Keepmind to embed what it kept (it does on write, or when its
    model finished loading); say how far it got."""
    done = engine.embedded(ids)
    if len(done) < len(ids) and not engine.models.embeddings_enabled:
        return "embeddings are off (memory.embeddings.enabled): recall finds these by their words"
    if len(done) < len(ids) and not engine.models.embedder_installed():  # nothing to wait for
        it, its = ("it", "its") if len(ids) == 1 else ("them", "their")
        return (f"the Keepmind at {url} has no embedding model installed: recall finds {it} by {its} words "
                f"until one is (`keepmind models install-offline`), and embeds {it} then")
    deadline = time.monotonic() + wait_s
    while len(done) < len(ids) and time.monotonic() < deadline:
        time.sleep(0.3)
        done = engine.embedded(ids)
    if len(done) == len(ids):
        return f"the Keepmind at {url} embedded {'it' if len(ids) == 1 else f'all {len(ids)}'}"
    return (f"the Keepmind at {url} has embedded {len(done)} of {len(ids)} so far; it embeds the rest as soon as "
            "its embedding model is ready (`keepmind status` says when it is not)")


def _curated_here(engine, where: dict[str, str]) -> dict:
    engine.drain_checkpoints()
    return engine.import_outcome(where)


def _embedder_here(engine) -> str | None:
    """Load the embedding model in this process (never downloading); None when it is ready, else
    what recall does without it."""
    with quieted("keepmind.models"):  # a missing model is said below in this command's words
        loaded = engine.models.load(download=False, repair=False, gate=False)
    if loaded.embedder is not None:
        return None
    if not engine.settings["memory.embeddings.enabled"]:
        return "embeddings are off (memory.embeddings.enabled): recall finds these by their words"
    return ("no embedding model is installed: recall finds these by their words until one is "
            "(`keepmind models install-offline`); Keepmind embeds them then")


def _embed_here(engine, memory_ids: list[str] | None = None) -> str:
    """Embed what lacks a vector; says how many (of `memory_ids`, when given) have one now."""
    missing = _embedder_here(engine) if engine.models.embedder() is None else None
    if missing is not None:
        return missing
    repaired = engine.models.repair_gaps()
    if memory_ids is None:
        done = repaired.embedded
    else:
        vectors = engine.models.vectors()
        done = sum(1 for i in memory_ids if vectors is not None and vectors.has(i))
    return (f"embedded {done} {'memory' if done == 1 else 'memories'} with {repaired.model_id}"
            + (f" ({repaired.failed} failed: `keepmind memory backfill-embeddings`)" if repaired.failed else ""))


def _embed_left(engine) -> str:
    """Nothing new was kept: embed what an earlier import left without a vector (it was stopped
    before it embedded, and its rows are now skipped as present); says nothing when none lacks one
    or no model is here to embed them."""
    if engine.models.embedder() is None and _embedder_here(engine) is not None:
        return ""
    repaired = engine.models.repair_gaps()
    if not repaired.embedded:
        return ""
    done = counted(repaired.embedded, "memory")
    return (f"embedded {done} that had no vector yet (an earlier import stopped before embedding them) with "
            f"{repaired.model_id}"
            + (f" ({repaired.failed} failed: `keepmind memory backfill-embeddings`)" if repaired.failed else ""))


def curate(engine, home: Path, where: dict[str, str], url: str | None, *, embed_left: bool = True
           ) -> tuple[dict, str]:
    """Have the queued checkpoints `where` curated and what they kept embedded: by the Keepmind at
    `url`, else here (then, with `embed_left`, also what an earlier import left without a vector).
    Returns the outcome (mdimport.outcome) and what was said of the embeddings."""
    if url:
        outcome = _curated_by_server(engine, home, where, url)
        return outcome, _embedded_by_server(engine, url, outcome["memory_ids"]) if outcome["memory_ids"] else ""
    _embedder_here(engine)  # first: curation compares by meaning, and embeds what it keeps
    outcome = _curated_here(engine, where)
    if outcome["memory_ids"]:
        return outcome, _embed_here(engine, outcome["memory_ids"])
    return outcome, _embed_left(engine) if embed_left else ""


def _summary(report: dict, outcome: dict) -> list[str]:
    counts = outcome["counts"]
    lines = [f"  kept {counts['kept']} as new memories"]
    if counts["merged"]:
        lines.append(f"  merged {counts['merged']} into memories already stored")
    if counts["skipped"]:
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(outcome["skipped_reasons"].items(),
                                                                   key=lambda kv: -kv[1]))
        lines.append(f"  skipped {counts['skipped']}: {why}")
    for key, words in (("blocked", "blocked as secret-like"), ("failed", "failed (`keepmind checkpoints list`)"),
                       ("waiting", "still queued (a running Keepmind curates them)")):
        if counts[key]:
            lines.append(f"  {words}: {counts[key]}")
    lines += [f"    {example}" for example in outcome["examples"]]
    if report["not_memories"]:
        kinds: dict[str, list[str]] = {}
        for at, reason in report["not_memories"]:
            kinds.setdefault(reason, []).append(at)
        told = ", ".join(f"{len(ats)} {reason}{'s' if len(ats) > 1 else ''}" for reason, ats in kinds.items())
        lines.append(f"  not memories (left out): {told}")
        lines += [f"    {at}: {reason}" for reason, ats in kinds.items() for at in ats[:3]]
    return lines


def _elsewhere(report: dict) -> str:
    """A warning when Keepmind's Markdown export went into a scope its memories were not exported
    from: the memories deleted there are not refused here, so they may come back."""
    scope = report["scope"]
    went = report.get("scopes") or [scope]
    other = [f"{s['audience']}/{s['boundary']}" for s in report.get("exported_from") or () if s not in went]
    if not other:
        return ""
    return (f"note: these memories were exported from {', '.join(other)}; in {scope['audience']}/{scope['boundary']} "
            "the memories deleted there are not refused. Import into one scope with --audience and --boundary, "
            "or leave both out to import an export of one scope where it came from.")


def _scope_flags_unused(args) -> str:
    """A JSON Lines export keeps each row's own scope: --audience and --boundary, given, did nothing
    (a walk asked for team/other and was not told)."""
    given = [f for f, v in (("--audience", args.audience), ("--boundary", args.boundary)) if v is not None]
    if not given:
        return ""
    return (f"note: {' and '.join(given)} did nothing: a JSON Lines export keeps each memory's own audience and "
            "boundary (they choose where Markdown goes)")


def cmd_import(args) -> int:
    if not args.json:
        return _import(args)
    # With --json every outcome is a JSON report on stdout, a refusal too: its `errors` say why.
    try:
        return _import(args)
    except EngineError as exc:
        message = exc.message
    except STORE_ERRORS as exc:  # as the CLI says it without --json (keepmind.desktop.cli)
        message = failure_line(exc, args)
    _print_json({"errors": [message]})
    return 2


def _print_json(report: dict) -> None:
    print(json_for_terminal({k: v for k, v in report.items() if k != "checkpoints"}, indent=2))


def _import(args) -> int:
    home = home_of(args, create=True)
    settings = load_home_settings(home)
    audience, boundary = chosen_scope(args, settings)
    url = _running(home)
    with open_engine(home, settings=settings, start_workers=False) as engine:
        report = engine.import_path(args.path, audience=audience, boundary=boundary,
                                    as_exported=args.audience is None and args.boundary is None)
        if report["errors"]:
            if args.json:
                _print_json(report)
                return 1
            print(f"nothing was imported: {len(report['errors'])} problem(s) to fix in {args.path}")
            for err in report["errors"][:20]:
                print(f"  {for_terminal(err)}")
            return 1
        if report["format"] == "jsonl" and not any(report[k] for k in ("imported", "skipped", "deleted", "earlier",
                                                                          "erased")):
            # an export of an empty store (its header, nothing else): the browser says so too
            raise InvalidInput(f"{Path(args.path).name} holds no memories (only an export header): there is "
                               "nothing to import in it")
        if report["format"] == "jsonl":
            embedded = ("" if not report["imported"] else f"the Keepmind at {url} embeds them within seconds"
                        if url else _embed_here(engine))
            if not url and not report["imported"]:
                embedded = _embed_left(engine)
            out = {**report, "embeddings": embedded}
            also = carried_said(report["deleted"], report["earlier"])
            lines = [f"imported {counted(report['imported'], 'memory')} from {args.path}"
                     + (f" ({also})" if also else "")
                     + f", skipped {report['skipped']} already present"
                     + (f", left out {report['erased']} erased for good here (with the names only"
                        f" {'it' if report['erased'] == 1 else 'they'} gave)" if report.get("erased") else ""),
                     embedded, _scope_flags_unused(args)]
        else:
            where = report["checkpoints"]
            outcome, embedded = curate(engine, home, where, url if where else None)
            out = {**report, "outcome": outcome, "embeddings": embedded}
            went = report.get("scopes") or [report["scope"]]
            into = ", ".join(f"{s['audience']}/{s['boundary']}" for s in went)
            lines = [f"imported {args.path} ({len(report['files'])} file{'s' if len(report['files']) != 1 else ''}) "
                     f"into {into}: {report['queued']} units of meaning",
                     *_summary(report, outcome), embedded, _elsewhere(report)]
    if args.json:
        _print_json(out)
    else:
        print(for_terminal("\n".join(line for line in lines if line)))
    return 0
