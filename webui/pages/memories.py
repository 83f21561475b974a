"""The memories list (`/memories`): search, filters, sorts and keyset pages; what was deleted
(`?deleted=1`) with restore and erase for good; several at once (delete as wrong, narrow the audience); a new
memory written by hand."""

from __future__ import annotations

from flask import Blueprint, request

from keepmind.engine import AUDIENCES, SORTS, SOURCE_GROUPS, EngineError, InvalidInput, MemoryFilter

from ..context import engine
from ..security import viewer_scope, viewer_token
from .memory import narrowing_text
from .render import choice, confirm, confirmed, dialog, done, page, text

bp = Blueprint("memories", __name__)
CLASSES = ("durable_fact", "evidence", "trace")
WRITABLE_CLASSES = ("durable_fact", "evidence")  # what "Write a memory" offers
SOURCE_LABELS = {"observed": "observed in a session", "agent": "stored by an agent", "imported": "imported",
                 "ui": "written here"}
# A search's matches are best first unless another order is chosen (a walk chose "most recalled"
# during a search and nothing moved); a list without a search is newest first then.
BEST = "best"
SORT_LABELS = {BEST: "best match (newest when not searching)", "newest": "newest", "last_recalled": "last recalled",
               "most_recalled": "most recalled"}
PAGE_SIZE = 50


def read_filters(args) -> tuple[MemoryFilter, dict]:
    """The filters in a query string (or form), and the same values to put back in the form."""
    values = {
        "q": (args.get("q") or "").strip(),
        "class": choice(args.get("class"), CLASSES),
        "audience": choice(args.get("audience"), AUDIENCES),
        "boundary": text(args.get("boundary")),
        "anchor": text(args.get("anchor")),
        "source": choice(args.get("source"), SOURCE_GROUPS),
        "state": "expired" if args.get("state") == "expired" else "live",
        "sort": choice(args.get("sort"), (*SORTS, BEST)),
    }
    values["sort"] = values["sort"] or BEST
    flt = MemoryFilter(memory_class=values["class"], audience=values["audience"], boundary=values["boundary"],
                       anchor_id=values["anchor"], source=values["source"], state=values["state"])
    return flt, values


def results(flt: MemoryFilter, values: dict, cursor: str | None = None) -> dict:
    """What the results fragment shows: a search's best matches, or one keyset page."""
    eng, scope = engine(), viewer_scope()
    anchor = None
    if values["anchor"]:
        try:
            anchor = eng.anchor(scope, values["anchor"])
        except EngineError:
            anchor = None
    if values["q"]:
        return {"items": in_order(eng.search_memories(scope, values["q"], flt=flt), values["sort"]),
                "next_cursor": None, "searched": True, "anchor": anchor}
    found = eng.browse(scope, flt=flt, sort="newest" if values["sort"] == BEST else values["sort"], cursor=cursor,
                       limit=PAGE_SIZE)
    return {"items": found.items, "next_cursor": found.next_cursor, "searched": False, "anchor": anchor}


def in_order(items: list, sort: str) -> list:
    """A search's matches in the chosen order (best match: as found); ties keep the match order."""
    if sort == "newest":
        return sorted(items, key=lambda m: -(m.updated_at or m.created_at or 0))
    if sort == "last_recalled":
        return sorted(items, key=lambda m: -(m.extra.get("last_recalled_at") or 0))
    if sort == "most_recalled":
        return sorted(items, key=lambda m: -(m.extra.get("recalled_count") or 0))
    return items


def form_context(values: dict) -> dict:
    """The filter form's choices, and the query string of these filters (for page links)."""
    args = {k: v for k, v in values.items() if v}
    if args.get("state") == "live":
        del args["state"]
    if args.get("sort") == BEST:
        del args["sort"]
    token = viewer_token()  # a team sign-in is not offered a personal filter that can never match
    audiences = tuple(a for a in ("personal", "team") if token.allows_audience(a))
    return {"values": values, "classes": CLASSES, "audiences": audiences, "sources": SOURCE_LABELS,
            "sorts": SORT_LABELS, "query_args": args}


@bp.get("/memories")
def memories():
    if request.args.get("deleted"):
        return deleted()
    flt, values = read_filters(request.args)
    cursor = request.args.get("cursor") or None
    try:
        found = results(flt, values, cursor)
    except InvalidInput as exc:  # a broken page link: said in place, with the first page one click away
        return page("memories.html", "_memory_results.html", http_status=400, **form_context(values),
                    items=[], next_cursor=None, searched=False, anchor=None, cursor=cursor, message=None,
                    error=exc.message)
    return page("memories.html", "_memory_results.html", **form_context(values), **found, cursor=cursor,
                message=None)


def deleted():
    cursor = request.args.get("cursor") or None
    try:
        found, next_cursor = engine().deleted(token=viewer_token(), cursor=cursor)
    except InvalidInput as exc:
        return page("deleted.html", "_deleted_rows.html", http_status=400, tombstones=[], next_cursor=None,
                    cursor=cursor, error=exc.message)
    message = ERASED_NOTICE if request.args.get("erased") else None
    return page("deleted.html", "_deleted_rows.html", tombstones=found, next_cursor=next_cursor, cursor=cursor,
                message=message)


@bp.post("/memories/bulk")
def bulk():
    """Several memories at once: delete as wrong (after a confirmation) or narrow the audience."""
    eng, scope = engine(), viewer_scope()
    ids = [i for i in request.form.getlist("ids") if i]
    action = request.form.get("action")
    flt, values = read_filters(request.form)
    # narrowing changes only the memories not in that audience already; the confirmation counts those
    changing = ([m.id for m in eng.get(scope, ids).items if m.audience != action]
                if ids and action in ("personal", "team") else None)
    if not ids:
        message = "Select one or more memories first."
    elif action == "delete" and request.form.get("confirmed") != "yes":
        items = eng.get(scope, ids).items
        return dialog("_confirm_delete.html", items=items, action_url="/memories/bulk", values=values)
    elif action == "delete":
        for memory_id in ids:
            eng.update(scope, memory_id, delete=True, reason="deleted as wrong in the browser", source="ui")
        message = (f"Deleted {len(ids)} as wrong. {'It is' if len(ids) == 1 else 'They are'} listed under Deleted, "
                   f"where you can restore {'it' if len(ids) == 1 else 'them'}.")
    elif changing == []:
        message = f"{'It is' if len(ids) == 1 else 'They are'} {action} already."
    elif changing is not None and not confirmed():
        n = len(changing)
        return confirm(f"Make {'this memory' if n == 1 else f'{n} memories'} {action}?", narrowing_text(action, n),
                       action_url="/memories/bulk", button=f"Make {action}", back_url="/memories",
                       fields=[*(("ids", i) for i in changing), ("action", action)], target="#results",
                       include="#filters")
    elif changing is not None:
        eng.narrow_audience(scope, changing, action, token=viewer_token())
        message = f"{len(changing)} now visible to {action} sessions only."
    else:
        message = "Choose what to do with the selected memories."
    return page("memories.html", "_memory_results.html", **form_context(values), **results(flt, values),
                cursor=None, message=message)


@bp.post("/tombstones/<tombstone_id>/restore")
def restore(tombstone_id: str):
    memory_id = engine().restore(tombstone_id, token=viewer_token())
    if memory_id and memory_id.startswith("cp-"):  # a proposal rejected in review waits for review again
        return done("/review")
    return done(f"/memories/{memory_id}")


ERASE_TEXT = ("Its text is erased everywhere Keepmind keeps it: every revision, the conversation turns it was "
              "learnt from, the sentences that say it in other conversations of its audience and boundary, the "
              "proposals and recall receipts that copied it, and the people and topics only it named. This cannot "
              "be undone: it can no longer be restored. Keepmind keeps only fingerprints of the claim, so it still "
              "will not learn the same claim again in those words.")
ERASED_NOTICE = ("Erased for good: its text is gone. Keepmind keeps only the claim's fingerprint, so it will not "
                 "learn it again.")


@bp.post("/tombstones/<tombstone_id>/erase")
def erase(tombstone_id: str):
    """Erase a deleted memory's text for good, after a confirmation that says what that means."""
    if not confirmed():
        found, _ = engine().deleted(token=viewer_token(), limit=200)
        title = next((t.get("title") for t in found if t["tombstone_id"] == tombstone_id), None)
        return confirm(f"Erase “{title}” for good?" if title else "Erase this memory for good?", ERASE_TEXT,
                       action_url=f"/tombstones/{tombstone_id}/erase",
                       button="Erase for good", back_url="/memories?deleted=1")
    engine().erase(tombstone_id, token=viewer_token())
    return done("/memories?deleted=1&erased=1")


@bp.get("/memories/new")
def new_memory():
    return page("memory_new.html", form={}, error=None, boundaries=_boundaries())


@bp.post("/memories")
def create_memory():
    eng, token = engine(), viewer_token()
    form = {k: (request.form.get(k) or "").strip() for k in ("title", "content", "audience", "boundary",
                                                             "memory_class", "anchor")}

    def refused(error: str, link: tuple[str, str] | None = None):
        return page("memory_new.html", http_status=422, form=form, error=error, link=link, boundaries=_boundaries())

    memory_class = form["memory_class"] or "durable_fact"
    if memory_class not in WRITABLE_CLASSES:  # a trace is a session's record, never written by hand
        return refused("Choose durable fact or evidence as the class.")
    try:
        scope = eng.author_scope(token, form["audience"], form["boundary"])
        result = eng.write_by_hand(scope, form["title"], form["content"], memory_class=memory_class,
                                   anchor=form["anchor"] or None)
    except EngineError as exc:
        return refused(exc.message)
    if result.action == "duplicate":
        return refused("Not stored: a memory in this audience and boundary already says this word for word.",
                       (f"/memories/{result.id}", "Open it"))
    if result.action == "tombstoned":  # said word for word, whole with more around it, or close in meaning
        return refused("Not stored: this says a memory that was deleted as wrong, so Keepmind does not learn it "
                       "again. To keep it, restore it from the deleted memories.",
                       ("/memories?deleted=1", "Deleted memories"))
    if result.action == "paused":
        return refused("Not stored: memory is paused, so nothing new is kept until it is resumed (Resume, at the "
                       "top of the page).")
    if result.id is None:  # refused by the write path's checks (a secret)
        return refused(f"Not stored: {result.reason or result.action}.")
    return done(f"/memories/{result.id}")


def _boundaries() -> list[str]:
    """The boundaries to offer, the first filled in: the token's own, or (for a token that may use
    any) those in use, most used first, else the MCP default."""
    token = viewer_token()
    if not token.any_boundary:
        return list(token.boundaries)
    eng = engine()
    return eng.boundaries_in_use() or [eng.settings["mcp.boundary"]]
