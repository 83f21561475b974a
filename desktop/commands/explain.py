"""`keepmind recall explain RECEIPT_ID` and `keepmind recall explain --last [N]`: why recall
injected what it did, or nothing.

`--last` takes the newest recalls of every client from the store (their receipts) and the Claude
Code hook's recall log (`hooks/claude-code/recalls.jsonl` in the data dir: the receipt id of each
prompt's recall, or why the hook could not ask, e.g. Keepmind was not running), newest first.
"""

from __future__ import annotations

import json
from pathlib import Path

from keepmind.engine import EngineError, open_engine
from keepmind.engine.clock import iso

from ..paths import home_of, home_option
from .numbers import positive_int
from .terminal import json_for_terminal, one_line

HOOK_LOG = Path("hooks") / "claude-code" / "recalls.jsonl"


def register(group) -> None:
    p = group.add_parser("explain", help="why a recall injected what it did (a receipt id, or --last N)")
    home_option(p)
    p.add_argument("receipt_id", nargs="?", help="a receipt id (rcp-...), from recall's answer")
    p.add_argument("--last", nargs="?", type=positive_int, const=1, default=None, metavar="N",
                   help="the newest N recalls (default 1), the Claude Code hook's included")
    p.add_argument("--json", action="store_true", help="print the receipt as JSON, whole (with --last: one object "
                                                       "per line)")
    p.set_defaults(func=cmd_explain)


def hook_log(home: Path, limit: int) -> list[dict]:
    """The newest `limit` entries of the Claude Code hook's recall log (none when it has no log)."""
    try:
        lines = (home / HOOK_LOG).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("at"), int):
            out.append(entry)
        if len(out) >= limit:
            break
    return out


def latest(engine, home: Path, n: int) -> list[dict]:
    """The newest n recalls: {at, channel, receipt, claude_session?, error?}, newest first."""
    found = {r["receipt_id"]: {"at": r["created_at"], "channel": r["channel"], "receipt": r["receipt_id"]}
             for r in engine.receipts(limit=n)}
    for entry in hook_log(home, n):
        receipt = entry.get("receipt")
        if receipt in found:
            found[receipt]["claude_session"] = entry.get("claude_session")
        else:
            found[receipt or f"hook-{entry['at']}"] = {
                "at": entry["at"], "channel": "claude-code", "receipt": receipt,
                "claude_session": entry.get("claude_session"), "error": entry.get("error")}
    return sorted(found.values(), key=lambda e: e["at"], reverse=True)[:n]


def why_nothing(receipt: dict) -> list[str]:
    """What kept every memory out of a recall that injected nothing, stage by stage."""
    counts = receipt.get("counts", {})
    out = []
    if counts.get("considered", 0) == 0 and not counts.get("excluded"):
        out.append("no memory this session may read shared a word with the message or came near it in meaning")
    elif counts.get("considered", 0) == 0:
        out.append("every memory the message reached was injected earlier in this session")
    if counts.get("excluded"):
        out.append(f"{counts['excluded']} already injected earlier in this session (again after a compaction)")
    floor = receipt.get("floor") or {}
    if counts.get("floor_dropped"):
        out.append(f"{counts['floor_dropped']} under the cosine floor {floor.get('value')} ({floor.get('source')})")
    decisions = (receipt.get("gate") or {}).get("decisions") or []
    if decisions and not any(d.get("kept") for d in decisions):
        best = max(decisions, key=lambda d: d.get("score", 0))
        titles = {c["id"]: c.get("title", "") for c in receipt.get("considered", [])}
        out.append(f"the {receipt['gate'].get('kind')} gate kept none of the top {len(decisions)}: best "
                   f"{best.get('score')} for {titles.get(best['id'], best['id'])!r} ({best.get('reason')})")
    if counts.get("budget_dropped"):
        out.append(f"{counts['budget_dropped']} did not fit the injection budget")
    for degraded in receipt.get("degraded") or []:
        if degraded != "progressive_recall_exhausted":  # said above: nothing is wrong
            out.append(f"degraded: {degraded}")
    return out or ["nothing passed the stages above"]


def describe(entry: dict, receipt: dict | None) -> list[str]:
    at = iso(entry["at"]) if isinstance(entry.get("at"), int) else (receipt or {}).get("created_at", "?")
    session = entry.get("session_id") or (receipt or {}).get("session_id") or "?"
    head = f"{at}  {one_line(entry.get('channel') or f'session {session}')}"  # a session may name no channel
    if entry.get("claude_session"):
        head += f" (Claude Code session {one_line(entry['claude_session'])})"
    if receipt is None:
        return [head, f"  no recall: {one_line(entry.get('error') or 'the receipt is gone (pruned?)')}"]
    injected = receipt.get("injected") or []
    counts = receipt.get("counts", {})
    lines = [head + f"  {receipt['receipt']}", f"  message: {receipt.get('query', '')[:200]!r}",
             f"  injected {len(injected)} of {counts.get('considered', 0)} considered"
             f" ({receipt.get('mode')}, {receipt.get('timings_ms', {}).get('total_ms', '?')} ms)"]
    joined = {c.get("id"): c.get("why") for c in receipt.get("companions") or [] if c.get("why")}
    lines += [f"    - {i.get('id')}  {one_line(i.get('title', ''))}"
              + (f"  ({one_line(joined[i.get('id')])})" if i.get("id") in joined else "") for i in injected]
    if not injected:
        lines += [f"  why nothing: {one_line(why)}" for why in why_nothing(receipt)]
    return lines


def cmd_explain(args) -> int:
    home = home_of(args)
    if args.receipt_id is None and args.last is None:
        raise EngineError("give a receipt id (recall's answer names it), or --last for the newest recalls")
    with open_engine(home, start_workers=False) as engine:
        if args.receipt_id is not None:
            receipt = engine.explain(args.receipt_id)
            if args.json:
                print(json_for_terminal(receipt, indent=2))
                return 0
            listed = engine.receipts(session_id=receipt.get("session_id"), limit=500)
            row = next((r for r in listed if r["receipt_id"] == args.receipt_id), {})
            print("\n".join(describe({"at": row.get("created_at"), "channel": row.get("channel")}, receipt)))
            return 0
        entries = latest(engine, home, args.last)
        if not entries:
            print(f"no recall yet in {home}: none was asked, and the Claude Code hook logged none")
            return 1
        for entry in entries:
            receipt = None
            if entry.get("receipt"):
                try:
                    receipt = engine.explain(entry["receipt"])
                except EngineError:
                    receipt = None
            if args.json:
                print(json_for_terminal({**entry, "receipt": receipt or entry.get("receipt")}))
            else:
                print("\n".join(describe(entry, receipt)))
    return 0
