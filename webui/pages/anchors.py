"""The knowledge graph: anchors (`/anchors`: search, type, counts) and one anchor
(`/anchors/<id>`): its memories, its edges through time (an "as of" day), a picture of the graph
around it, and rename and merge."""

from __future__ import annotations

from flask import Blueprint, request

from keepmind.engine import EngineError, InvalidInput, MemoryFilter, NotFound
from keepmind.engine.wording import counted

from .. import graph_svg
from ..context import engine
from ..security import viewer_scope
from .render import confirm, confirmed, day_end_ms, done, is_role, page, text

bp = Blueprint("anchors", __name__)
DEPTHS = (1, 2)
GRAPH_LIMIT, GRAPH_MORE = 30, 120


@bp.get("/anchors")
def anchors():
    q, anchor_type = text(request.args.get("q")), text(request.args.get("type"))
    after = text(request.args.get("after"))
    every = request.args.get("empty") == "1"  # also the anchors with nothing on them
    eng, scope = engine(), viewer_scope()
    found = eng.anchors(scope, query=q, anchor_type=anchor_type, limit=51, after=after,
                        in_use=None if every else True)
    more = len(found) > 50
    found = found[:50]
    # An anchor whose memories were all deleted, with no edge, is left out unless asked for: a name
    # with nothing behind it. The page says so when there are some, with a link to them.
    hidden = not every and bool(eng.anchors(scope, query=q, anchor_type=anchor_type, limit=1, in_use=False))
    # The types this viewer's anchors have (the writers make their own, an LLM others), and the one
    # asked for, so the filter shows what it filters by even when nothing has that type.
    types = sorted({*eng.anchor_types(scope), *([anchor_type] if anchor_type else [])})
    return page("anchors.html", "_anchor_rows.html", anchors=found, q=q or "", type=anchor_type or "",
                types=types, after=after, next_after=found[-1].name.lower() if more and found else None,
                every=every, hidden=hidden)


def retired_at(edges: list, as_of: int | None) -> list:
    """The retired edges: today every closed one; as of a moment, those that had ended by then
    (one that ended later still held, or had not begun: it belongs to later history)."""
    return [e for e in edges if not e.current and (as_of is None or e.valid_to <= as_of)]


def retired_by(edges: list) -> dict[str, object]:
    """For each retired edge, the current edge that replaced it (same relation, from the same anchor,
    starting when it ended), to say "previously X, until <date>; now Y"."""
    out = {}
    for old in edges:
        if old.current:
            continue
        for new in edges:
            if (new.id != old.id and new.from_id == old.from_id and new.relation == old.relation
                    and new.valid_from == old.valid_to):
                out[old.id] = new
    return out


def graph_context(anchor_id: str, as_of: int | None) -> dict:
    try:
        depth = int(request.args.get("depth", "1"))
    except ValueError:
        depth = 1
    depth = depth if depth in DEPTHS else 1
    limit = GRAPH_MORE if request.args.get("more") else GRAPH_LIMIT
    nodes, edges, truncated = engine().neighbourhood(viewer_scope(), anchor_id, depth=depth, limit=limit, as_of=as_of)
    placed, lines = graph_svg.layout(anchor_id, nodes, edges)
    return {"nodes": placed, "lines": lines, "truncated": truncated, "depth": depth, "more": limit == GRAPH_MORE,
            "view_box": graph_svg.view_box(placed), "center_id": anchor_id}


@bp.get("/anchors/<anchor_id>")
def anchor(anchor_id: str):
    eng, scope = engine(), viewer_scope()
    try:
        found = eng.anchor(scope, anchor_id)
    except NotFound:
        moved = eng.merged_into(scope, anchor_id)
        if moved is None:
            raise
        return done(f"/anchors/{moved}")
    as_of_text, as_of_error = text(request.args.get("as_of")), None
    try:
        as_of = day_end_ms(as_of_text)
    except InvalidInput as exc:  # said next to the date field, on the anchor as it stands today
        as_of, as_of_error = None, exc.message
    edges = eng.edges(scope, anchor_id)
    shown = eng.edges(scope, anchor_id, as_of=as_of) if as_of is not None else edges
    return page(
        "anchor.html", http_status=400 if as_of_error else 200, anchor=found, as_of=as_of,
        as_of_text="" if as_of_error else as_of_text or "", as_of_error=as_of_error,
        current=[e for e in shown if (e.current if as_of is None else e.holds_at(as_of))],
        retired=retired_at(edges, as_of),
        replaced=retired_by(edges),
        memories=eng.browse(scope, flt=MemoryFilter(anchor_id=anchor_id, until=as_of), limit=50),
        history=eng.anchor_history(scope, anchor_id), **merge_candidates(found), error=None,
        **graph_context(anchor_id, as_of),
    )


def merge_candidates(found) -> dict:
    """The anchors `found` may merge into (same audience and boundary): those of its own type first,
    then the others apart, so a person is not merged into a pet by a slip of the list."""
    others = [a for a in engine().anchors(viewer_scope(), limit=500)
              if a.id != found.id and (a.audience, a.boundary) == (found.audience, found.boundary)]
    return {"candidates": [a for a in others if a.type == found.type],
            "other_candidates": [a for a in others if a.type != found.type]}


@bp.get("/anchors/<anchor_id>/graph")
def graph(anchor_id: str):
    found = engine().anchor(viewer_scope(), anchor_id)
    as_of_text, as_of_error = text(request.args.get("as_of")), None
    try:
        as_of = day_end_ms(as_of_text)
    except InvalidInput as exc:
        as_of, as_of_text, as_of_error = None, None, exc.message
    return page("anchor_graph.html", "_graph.html", http_status=400 if as_of_error else 200,
                as_of_text=as_of_text or "", as_of_error=as_of_error, anchor=found, **graph_context(anchor_id, as_of))


@bp.post("/anchors/<anchor_id>/rename")
def rename(anchor_id: str):
    try:
        engine().rename_anchor(viewer_scope(), anchor_id, request.form.get("name", ""))
    except EngineError as exc:
        return page("form_error.html", "_form_error.html", http_status=422, message=exc.message)
    return done(f"/anchors/{anchor_id}")


@bp.post("/anchors/<anchor_id>/merge")
def merge(anchor_id: str):
    """Merge this anchor into the chosen one (its memories, edges and name move there), after a
    confirmation naming both and their types; the chosen one's page can undo it (undo_merge)."""
    eng, scope = engine(), viewer_scope()
    into = request.form.get("into", "")
    try:
        if not into:
            raise InvalidInput("choose the anchor this one is the same thing as")
        if not confirmed():
            return _confirm_merge(eng.anchor(scope, anchor_id), eng.anchor(scope, into),
                                  eng.edges_between(scope, anchor_id, into))
        eng.merge_anchors(scope, anchor_id, into)
    except EngineError as exc:
        return page("form_error.html", "_form_error.html", http_status=422, message=exc.message)
    return done(f"/anchors/{into}")


@bp.post("/anchors/<anchor_id>/merges/<merge_id>/undo")
def undo_merge(anchor_id: str, merge_id: str):
    """Undo the last merge into this anchor: the merged-away anchor stands again (its page opens)."""
    try:
        undone = engine().undo_merge(viewer_scope(), merge_id)
    except EngineError as exc:
        return page("form_error.html", "_form_error.html", http_status=422, message=exc.message)
    return done(f"/anchors/{undone['from_anchor_id']}")


def _a(word: str) -> str:
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _said(edge) -> str:
    """An edge as a sentence: "Anna lives in Porto", "Bob is Anna’s sister" (a relation that names a role)."""
    rel = edge.relation.replace("_", " ")
    return f"{edge.to_name} is {edge.from_name}’s {rel}" if is_role(edge.relation) else \
        f"{edge.from_name} {rel} {edge.to_name}"


def _confirm_merge(old, into, between=()):
    moved = max(0, old.edges - len(between))  # an edge between the two stays behind, dropped
    moves = f"its {counted(old.memories, 'memory')} and {counted(moved, 'edge')} move there"
    dropped = ""
    if between:
        them = ", ".join(f"“{_said(e)}”" for e in between)
        dropped = (f" {'The edge' if len(between) == 1 else 'The edges'} between them, {them}, "
                   f"{'is' if len(between) == 1 else 'are'} dropped: one thing does not stand in a relation to "
                   "itself. An undo brings back what is dropped.")
    text = (f"“{old.name}” ({old.type}) becomes another name of “{into.name}” ({into.type}): {moves}, and "
            f"later mentions of “{old.name}” land there.{dropped} Until another anchor is merged into "
            f"“{into.name}”, its page can undo this merge.")
    heading = f"Merge “{old.name}” into “{into.name}”?"
    button = "Merge"
    if old.type != into.type:
        heading = f"Merge {_a(old.type)} into {_a(into.type)}?"
        text = (f"“{old.name}” is {_a(old.type)} and “{into.name}” is {_a(into.type)}: they are different kinds of "
                f"thing. After the merge “{into.name}” stays {_a(into.type)}. " + text)
        button = f"Merge the {old.type} into the {into.type}"
    return confirm(heading, text, action_url=f"/anchors/{old.id}/merge", button=button,
                   back_url=f"/anchors/{old.id}", fields=[("into", into.id)], target="#anchor-errors")
