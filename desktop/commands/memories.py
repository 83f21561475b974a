"""`keepmind memories list|show` and `keepmind sessions list`: what Keepmind holds, from a shell.

They read the store of the data dir directly (no server needed) with the local view: every
audience a personal token sees, in every boundary.
"""

from __future__ import annotations

import sys

from keepmind.engine import InvalidInput, NotFound, Scope, open_engine
from keepmind.engine.clock import iso

from ..paths import home_of, home_option
from .numbers import positive_int
from .terminal import for_terminal, json_for_terminal, one_line

LOCAL_VIEW = Scope.viewer("personal", None)


def register(sub) -> None:
    p = sub.add_parser("memories", help="list, search and show memories")
    msub = p.add_subparsers(dest="memories_command", metavar="ACTION", required=True)
    q = msub.add_parser("list", help="newest memories first, or the best matches of --query")
    home_option(q)
    q.add_argument("--query", "-q", help="search (the same full-text search agents use)")
    q.add_argument("--limit", type=positive_int, default=20, help="at most this many (default 20)")
    q.add_argument("--json", action="store_true", help="print JSON Lines")
    q.set_defaults(func=cmd_list)
    q = msub.add_parser("show", help="one memory by id, with its revisions")
    home_option(q)
    q.add_argument("memory_id")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=cmd_show)

    p = sub.add_parser("sessions", help="list agent sessions")
    ssub = p.add_subparsers(dest="sessions_command", metavar="ACTION", required=True)
    q = ssub.add_parser("list", help="newest sessions first, with their turns and the memories they formed")
    home_option(q)
    q.add_argument("--limit", type=positive_int, default=20, help="at most this many (default 20)")
    q.add_argument("--json", action="store_true", help="print JSON Lines")
    q.set_defaults(func=cmd_sessions)


def _line(item) -> str:
    title = item.title or item.body[:60]
    return f"{item.id}  {item.memory_class:<12} {one_line(item.audience)}/{one_line(item.boundary)}  {one_line(title)}"


def cmd_list(args) -> int:
    with open_engine(home_of(args), start_workers=False) as engine:
        if args.query:
            if engine.models.embeddings_enabled:  # so fewer matches by words are topped up by meaning
                engine.models.load(download=False, repair=False, gate=False)
            items = engine.find(LOCAL_VIEW, args.query, limit=args.limit + 1)
        else:
            items = engine.list_memories(LOCAL_VIEW, limit=args.limit + 1)
    more, items = len(items) > args.limit, items[:args.limit]
    for item in items:
        print(json_for_terminal(item.as_dict()) if args.json else _line(item))
    if not items and not args.json:
        print("no memories match" if args.query else "no memories yet")
    if more:  # on stderr: --json's lines stay JSON; a person checking what was learnt sees there is more
        print(f"the first {args.limit} shown: there are more (--limit N shows more)", file=sys.stderr)
    return 0


def cmd_show(args) -> int:
    with open_engine(home_of(args), start_workers=False) as engine:
        got = engine.get(LOCAL_VIEW, [args.memory_id])
        if not got.items:
            reason = got.missing[0][1] if got.missing else ""
            if "visible to this session" in reason or not reason:  # the CLI has no session: it sees every memory
                raise NotFound(f"no memory {args.memory_id}: check the id (`keepmind memories list` shows them), "
                               "or it was deleted")
            raise InvalidInput(reason)  # a malformed id: the reason names it already
        item = got.items[0]
        revisions = engine.revisions(LOCAL_VIEW, item.id)
    if args.json:
        print(json_for_terminal({**item.as_dict(), "revisions": revisions}, indent=2))
        return 0
    print(_line(item))
    print(f"created {iso(item.created_at)}  authored {iso(item.authored_at)}"
          + (f"  expires {iso(item.expires_at)}" if item.expires_at else ""))
    print()
    print(for_terminal(item.body))
    if len(revisions) > 1:
        print()
        print(f"{len(revisions)} revisions:")
        for rev in revisions:
            print(f"  r{rev['revision']}  {iso(rev['created_at'])}  {one_line(rev['source'])}  "
                  f"{one_line(rev['reason'] or '')}".rstrip())
    return 0


def cmd_sessions(args) -> int:
    with open_engine(home_of(args), start_workers=False) as engine:
        found = engine.sessions(limit=args.limit)
    for s in found:
        if args.json:
            print(json_for_terminal(s))
        else:
            print(f"{s['session_id']}  {s['status']:<6} {one_line(s['audience'])}/{one_line(s['boundary'])}  "
                  f"turns={s['turns']}  memories={s['memories_formed']}  {iso(s['created_at'])}  "
                  f"{one_line(s['title'] or '')}".rstrip())
    if not found and not args.json:
        print("no sessions yet")
    return 0
