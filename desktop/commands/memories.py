"""`keepmind memories list|show|add|edit|delete|deleted|restore|erase` and `keepmind sessions
list`: what Keepmind holds, from a shell.

They read the store of the data dir directly (no server needed) with the local view: every
audience a personal token sees, in every boundary. `memories add` stores one memory as an agent's
store_memory does (curated: secrets blocked, duplicates skipped), in the scope agents use
(mcp.audience / mcp.boundary unless told), and waits for the running Keepmind to curate it, or
curates it here when none runs. `memories deleted` lists what was deleted as wrong, as the
browser's Deleted page does; `edit`, `restore` and `erase` (for good, asked first) act through the
running Keepmind when one answers, so its recall follows at once, else on the store here.
"""

from __future__ import annotations

import sys
from itertools import islice
from urllib.parse import quote

from keepmind.engine import InvalidInput, NotFound, Scope, open_engine
from keepmind.engine.clock import iso
from keepmind.engine.wording import counted

from ..paths import chosen_scope, home_of, home_option, load_home_settings
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
    q = msub.add_parser("add", help="remember something: one memory, curated as an agent's store_memory is")
    home_option(q)
    q.add_argument("text", metavar="TEXT", help='what to remember, in words ("I prefer window seats.")')
    q.add_argument("--title", default="", help="its title (default: from its text)")
    q.add_argument("--audience", choices=("personal", "team"), default=None,
                   help="who may recall it (default: mcp.audience in keepmind.json, personal)")
    q.add_argument("--boundary", default=None,
                   help="where it may be recalled (default: mcp.boundary in keepmind.json, 'default'), the one "
                        "your agents' sessions use")
    q.add_argument("--json", action="store_true", help="print the outcome as JSON")
    q.set_defaults(func=cmd_add)
    q = msub.add_parser("show", help="one memory by id, with its revisions")
    home_option(q)
    q.add_argument("memory_id")
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=cmd_show)
    q = msub.add_parser("delete", help="delete a memory as wrong: it is not recalled or learnt again (`memories "
                                       "restore` brings it back, `memories erase` erases its text for good)")
    home_option(q)
    q.add_argument("memory_id", metavar="MEMORY_ID")
    q.add_argument("--reason", default="deleted as wrong", help="why, kept with the deletion (default: deleted "
                                                                  "as wrong)")
    q.set_defaults(func=cmd_delete)
    q = msub.add_parser("edit", help="correct a memory by hand: its whole text, one wording in it, or its title")
    home_option(q)
    q.add_argument("memory_id", metavar="MEMORY_ID")
    q.add_argument("--text", default=None, help="its corrected text, whole")
    q.add_argument("--replace", nargs=2, metavar=("OLD", "NEW"), default=None,
                   help="replace every occurrence of OLD in its text by NEW")
    q.add_argument("--title", default=None, help="its new title")
    q.add_argument("--json", action="store_true", help="print the outcome as JSON")
    q.set_defaults(func=cmd_edit)
    q = msub.add_parser("deleted", help="what was deleted as wrong, newest first, by tombstone id (to restore "
                                        "or erase one)")
    home_option(q)
    q.add_argument("--limit", type=positive_int, default=20, help="at most this many (default 20)")
    q.add_argument("--json", action="store_true", help="print JSON Lines")
    q.set_defaults(func=cmd_deleted)
    q = msub.add_parser("restore", help="bring back a memory deleted as wrong (its tombstone id from "
                                        "`memories deleted`)")
    home_option(q)
    q.add_argument("tombstone_id", metavar="TOMBSTONE_ID")
    q.set_defaults(func=cmd_restore)
    q = msub.add_parser("erase", help="erase for good the text of a memory deleted as wrong, everywhere Keepmind "
                                      "keeps it (cannot be undone)")
    home_option(q)
    q.add_argument("tombstone_id", metavar="TOMBSTONE_ID")
    q.add_argument("--yes", "-y", action="store_true",
                   help="erase without asking (needed when stdin is not a terminal)")
    q.set_defaults(func=cmd_erase)

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


def cmd_add(args) -> int:
    from .imports import _running, curate

    home = home_of(args, create=True)
    settings = load_home_settings(home)
    audience, boundary = chosen_scope(args, settings)
    url = _running(home)
    with open_engine(home, settings=settings, start_workers=False) as engine:
        session = engine.open_session(audience, boundary, channel="cli", title="keepmind memories add")
        try:
            queued = engine.store_memory(session, args.title, args.text)
        finally:
            engine.end_session(session)
        if queued.action != "queued":  # paused, or refused as a secret
            print(for_terminal(f"not kept: {queued.reason}"), file=sys.stderr)
            return 1
        where = {queued.checkpoint_id: "the memory"}
        outcome, embedded = curate(engine, home, where, url, embed_left=False)
        said = _outcome_line(outcome, f"{audience}/{boundary}")
        if args.json:
            print(json_for_terminal({"scope": {"audience": audience, "boundary": boundary}, "said": said,
                                     "memory_ids": outcome["memory_ids"], "counts": outcome["counts"],
                                     "embeddings": embedded}))
        else:
            print(for_terminal("\n".join(line for line in (said, embedded) if line)))
    return 0 if outcome["counts"]["kept"] or outcome["counts"]["merged"] else 1


def _outcome_line(outcome: dict, scope: str) -> str:
    counts, ids = outcome["counts"], outcome["memory_ids"]
    if counts["kept"]:
        return f"kept as {ids[0]} in {scope}"
    if counts["merged"]:
        return f"added to {ids[0]}, which said part of it already ({scope})"
    if counts["waiting"]:
        return "queued: the running Keepmind curates it when memory is on again (`keepmind status` says why not)"
    why = ", ".join(outcome["skipped_reasons"]) or "; ".join(outcome["examples"]) or "nothing new"
    return f"not kept: {why}"


def cmd_show(args) -> int:
    with open_engine(home_of(args), start_workers=False) as engine:
        item = _one_memory(engine, args.memory_id)
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


def _one_memory(engine, memory_id: str):
    """The live memory with this id, or an error a person can act on."""
    got = engine.get(LOCAL_VIEW, [memory_id])
    if got.items:
        return got.items[0]
    reason = got.missing[0][1] if got.missing else ""
    if "visible to this session" in reason or not reason:  # the CLI has no session: it sees every memory
        raise _not_shown(memory_id)
    raise InvalidInput(reason)  # a malformed id: the reason names it already


def _not_shown(memory_id: str) -> NotFound:
    return NotFound(f"no memory {memory_id}: check the id (`keepmind memories list` shows them); a memory deleted "
                    "as wrong is listed by `keepmind memories deleted`")


def cmd_delete(args) -> int:
    """Delete as wrong, by hand: a person's deletion, as the browser's (a tombstone, the graph it
    asserted closed). On the store directly, also with Keepmind running: its recall reads what
    is visible from the store, so a deleted memory is not recalled from the next message on."""
    memory_id = args.memory_id.strip()
    with open_engine(home_of(args), start_workers=False) as engine:
        item = _one_memory(engine, memory_id)
        engine.update(LOCAL_VIEW, item.id, delete=True, reason=args.reason.strip() or "deleted as wrong", source="ui")
        tomb = next((t for t in islice(_each_deleted(engine), 200) if t["memory_id"] == item.id), None)
    named = tomb["tombstone_id"] if tomb else "TOMBSTONE_ID"
    print(f"deleted {_quoted(item.title or item.body[:60])} as wrong: it is not recalled or learnt again; "
          f"`keepmind memories restore {named}` brings it back, `keepmind memories erase {named}` erases its "
          "text for good")
    return 0


# What an edit did (UpdateResult.action), in words.
EDITED = {"replaced": "corrected", "rewritten": "rewritten", "retitled": "retitled",
          "superseded": "corrected (a new record supersedes it)", "unchanged": "left as it was: nothing changed"}


def cmd_edit(args) -> int:
    """Correct a memory by hand, as the browser's edit does: a new revision (a record: the record
    that supersedes it), the graph it asserted following. Through the running Keepmind when one
    answers, so the new text is embedded and recalled at once; else on the store here, embedded
    here."""
    if args.text is None and args.replace is None and args.title is None:
        raise InvalidInput("say what to change: --text NEW, --replace OLD NEW, or --title TITLE")
    if args.text is not None and args.replace is not None:
        raise InvalidInput("give --text (the whole new text) or --replace OLD NEW, not both")
    if args.text is not None and not args.text.strip():  # said in the API's words, it named new_content
        raise InvalidInput(f"--text is empty: to remove a memory, use `keepmind memories delete {args.memory_id}`")
    if args.title is not None and not args.title.strip():
        raise InvalidInput("--title is empty: give the memory a title")
    change: dict = {}
    if args.text is not None:
        change["new_content"] = args.text
    if args.replace is not None:
        change["old_text"], change["new_text"] = args.replace
    if args.title is not None:
        change["title"] = args.title
    home = home_of(args)
    with open_engine(home, start_workers=False) as engine:
        item = _one_memory(engine, args.memory_id.strip())
    if args.replace is not None and args.replace[0] not in item.body:
        raise InvalidInput(f"{_quoted(args.replace[0])} is not in its text: copy it exactly (case matters); "
                           f"`keepmind memories show {item.id}` shows it")
    result, embedded = _edited(home, item, change)
    if result["action"] == "blocked":
        print(for_terminal(f"not changed: {result['reason']}"), file=sys.stderr)
        return 1
    now_id = result.get("new_id") or item.id
    if args.json:  # what became of its vector, said as the text form says it (never an empty string)
        print(json_for_terminal({**result, "embeddings": embedded or None}))
        return 0
    said = EDITED.get(result["action"], result["action"])
    count = (f" ({counted(result['replacements'], 'replacement')})"
             if result["action"] == "replaced" and result.get("replacements") else "")
    print(for_terminal(f"{_quoted(item.title or item.body[:60])} {said}{count}"
                       + (f": now {now_id}" if now_id != item.id else "")))
    if embedded:
        print(for_terminal(embedded))
    return 0


def _edited(home, item, change: dict) -> tuple[dict, str]:
    """(the update's result as the API answers it, what became of its vector): through the running
    Keepmind, in a session of the memory's own scope, or on the store here."""
    from ..process.client import DaemonClient
    from .imports import _embed_here

    client = DaemonClient.from_home(home)
    if client is not None:
        try:
            session = client.post("/sessions", {"audience": item.audience, "boundary": item.boundary,
                                                "channel": "cli", "title": "keepmind memories edit"})["session"]
            try:
                result = client.post(f"/sessions/{quote(session['id'], safe='')}/tools/update_memory",
                                     {"id": item.id, **change})["result"]
            finally:
                client.post(f"/sessions/{quote(session['id'], safe='')}/end")
        finally:
            client.close()
        return result, ""  # the running Keepmind embeds what it writes
    with open_engine(home, start_workers=False) as engine:
        done = engine.update(LOCAL_VIEW, item.id, source="ui", **change)
        result = {"id": done.id, "action": done.action, "new_id": done.new_id, "replacements": done.replacements,
                  "revision": done.revision, "reason": done.reason}
        embedded = "" if done.action in ("unchanged", "blocked") else _embed_here(engine, [done.new_id or done.id])
    return result, embedded


def _quoted(text: str) -> str:
    return f"\u201c{one_line(text)}\u201d"


# -- what was deleted as wrong --------------------------------------------------------------------

# Where an erased memory's text was blanked (Engine.erase's counts), in words.
ERASED_PLACES = (("revisions", "revision"), ("records", "record"), ("checkpoints", "proposal"),
                 ("turns", "conversation turn"), ("observer_runs", "observer run"),
                 ("curation_events", "curation decision"), ("receipts", "recall receipt"),
                 ("anchors", "anchor"), ("edges", "graph edge"))
ERASE_SAYS = ("Its text is erased everywhere Keepmind keeps it: every revision, the conversation turns it was "
              "learnt from, the sentences that say it in other conversations of its audience and boundary, the "
              "proposals and recall receipts that copied it, the people and topics only it named. Keepmind keeps "
              "only fingerprints, so it still will not learn the same claim again in those words.")


def _each_deleted(engine):
    """Every deletion still standing, newest first, page by page (the local view)."""
    cursor = None
    while True:
        found, cursor = engine.deleted(cursor=cursor, limit=100)
        yield from found
        if cursor is None:
            return


def _called(t: dict) -> str:
    if t["erased_at"] is not None:
        return "(erased)"
    return one_line(t["title"] or (t["body"] or "")[:60] or t["memory_id"] or "(untitled)")


def _deleted_line(t: dict) -> str:
    erased = f"  erased for good {iso(t['erased_at'])}" if t["erased_at"] is not None else ""
    why = (t.get("reason") or "").strip()
    why = f"  ({one_line(why)})" if why and why != "deleted as wrong" and t["erased_at"] is None else ""
    return (f"{t['tombstone_id']}  deleted {iso(t['created_at'])}  {one_line(t['audience'])}/"
            f"{one_line(t['boundary'])}  {_called(t)}{why}{erased}")


def _deletion(home, tombstone_id: str) -> dict:
    """The deletion with this tombstone id (NotFound, in words, when there is none)."""
    with open_engine(home, start_workers=False) as engine:
        found = next((t for t in _each_deleted(engine) if t["tombstone_id"] == tombstone_id), None)
    if found is None:
        if not tombstone_id.startswith("tomb-"):
            raise InvalidInput(f"{tombstone_id or 'an empty id'} is not a tombstone id: a deletion is named by one "
                               "starting with tomb- (`keepmind memories deleted` lists them)")
        raise NotFound(f"no deleted memory {tombstone_id}: `keepmind memories deleted` lists them by tombstone id "
                       "(a restored memory is no longer there)")
    return found


def _on_deletion(home, verb: str, tombstone_id: str) -> dict:
    """Restore or erase (verb) through the running Keepmind when one answers, its caches and word
    counts following at once; else on the store here. The answer is the API's (webui.api)."""
    from keepmind.webui.api import erased_result

    from ..process.client import DaemonClient

    client = DaemonClient.from_home(home)
    if client is not None:
        try:
            answer = client.post(f"/deleted/{quote(tombstone_id, safe='')}/{verb}",
                                 {"confirm": "erase"} if verb == "erase" else {})
        finally:
            client.close()
        return answer["erased" if verb == "erase" else "restored"]
    with open_engine(home, start_workers=False) as engine:
        if verb == "erase":
            return erased_result(engine.erase(tombstone_id))
        return {"tombstone_id": tombstone_id, "memory_id": engine.restore(tombstone_id)}


def cmd_deleted(args) -> int:
    from keepmind.webui.api import deleted_item

    with open_engine(home_of(args), start_workers=False) as engine:
        found = list(islice(_each_deleted(engine), args.limit + 1))
    more, found = len(found) > args.limit, found[:args.limit]
    for t in found:
        print(json_for_terminal(deleted_item(t)) if args.json else _deleted_line(t))
    if not found and not args.json:
        print("nothing has been deleted")
    if more:
        print(f"the first {args.limit} shown: there are more (--limit N shows more)", file=sys.stderr)
    return 0


def cmd_restore(args) -> int:
    home = home_of(args)
    tombstone_id = args.tombstone_id.strip()
    t = _deletion(home, tombstone_id)
    restored = _on_deletion(home, "restore", tombstone_id)
    held = f" as {restored['memory_id']}" if restored.get("memory_id") else ""
    print(f"restored {_quoted(_called(t))}{held} in {one_line(t['audience'])}/{one_line(t['boundary'])}: it is "
          "recalled again, and the same fact may be learnt again")
    return 0


def cmd_erase(args) -> int:
    home = home_of(args)
    tombstone_id = args.tombstone_id.strip()
    t = _deletion(home, tombstone_id)
    if t["erased_at"] is not None:
        raise InvalidInput(f"{tombstone_id} was erased for good already ({iso(t['erased_at'])}): its text is gone")
    if not args.yes:
        if not sys.stdin.isatty():
            raise InvalidInput(f"not erased: erasing for good cannot be undone, so it asks first, and stdin is not a "
                               f"terminal to ask on: add --yes to erase {tombstone_id} without asking")
        print(f"Erase for good {_quoted(_called(t))} (deleted {iso(t['created_at'])}, {one_line(t['audience'])}/"
              f"{one_line(t['boundary'])})?\n{ERASE_SAYS}", file=sys.stderr)
        print("This cannot be undone. Type erase to go on: ", end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() != "erase":
            print("not erased (to go on, type the word erase)", file=sys.stderr)
            return 1
    erased = _on_deletion(home, "erase", tombstone_id)
    places = [counted(erased["counts"].get(key, 0), noun) for key, noun in ERASED_PLACES
              if erased["counts"].get(key)]
    # not its title again: what is erased for good is not printed once more
    print(f"erased {tombstone_id} for good" + (f": its text is gone from {_listed(places)}" if places else ""))
    if erased["scrubbed"]:
        print("the database file was rewritten without it (VACUUM)")
    else:
        print("its text is gone from every row, but the database file could not be rewritten yet (a reader held "
              "it, or the disk had no room): the next erase tries again")
    return 0


def _listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


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
