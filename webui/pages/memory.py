"""One memory (`/memories/<id>`): what it says and everything about it — provenance, revisions
with a diff and revert, curation events, recall history — and its actions: edit (rewrite or
find-and-replace; a record is superseded), narrow its audience, merge a duplicate into another,
delete as wrong."""

from __future__ import annotations

from flask import Blueprint, request

from keepmind.engine import EngineError, InvalidInput, MemoryFilter, NotFound
from keepmind.engine.history import diff_words

from ..context import engine
from ..security import viewer_scope, viewer_token
from .render import confirm, confirmed, dialog, done, page, page_int

bp = Blueprint("memory", __name__)
MERGE_CHOICES = 8
EDIT_FIELDS = {"rewrite": (("title", "The title"), ("content", "The text")),
               "replace": (("old_text", "The text to find"), ("new_text", "The replacement"))}


def _revision_pair(revisions: list[dict]) -> tuple[int | None, int | None, str | None]:
    """The two revisions the diff compares: ?a=&b= (or ?from=&to=) when given, else the newest and
    the one before; and what is wrong with the ones asked for (it showed another pair, silently)."""
    numbers = [r["revision"] for r in revisions]
    newest = (numbers[1], numbers[0]) if len(numbers) > 1 else (None, None)
    asked = [request.args.get(new) or request.args.get(old) or "" for new, old in (("a", "from"), ("b", "to"))]
    if not any(v.strip() for v in asked):
        return (*newest, None)
    known = (f"this memory has revisions {min(numbers)} to {max(numbers)}" if len(numbers) > 1
             else "this memory has only one revision so far")
    for value in asked:
        if not value.strip().isdecimal():
            return (*newest, f"“{value.strip()}” is not a revision number: {known}")
        if int(value) not in numbers:
            return (*newest, f"there is no revision {int(value)}: {known}")
    return int(asked[0]), int(asked[1]), None


def _diff(revisions: list[dict], a: int | None, b: int | None) -> dict | None:
    """Revision `a` against `b`, the title and the text apart: Engine.diff runs over both at once, and
    the page showed a title that is the text's first sentence as the same words twice, unlabelled."""
    if a is None:
        return None
    by_number = {r["revision"]: r for r in revisions}
    old, new = by_number[a], by_number[b]
    return {"title": diff_words(old["title"], new["title"]) if old["title"] != new["title"] else None,
            "body": diff_words(old["body"], new["body"]) if old["body"] != new["body"] else None,
            "title_now": new["title"]}


@bp.get("/memories/<memory_id>")
def memory(memory_id: str):
    eng, scope, token = engine(), viewer_scope(), viewer_token()
    try:
        item = eng.memory(scope, memory_id)
    except NotFound:
        # A duplicate merged into another is no deletion: its page said "Not found ... or it was deleted"
        # and sent to Deleted, which never lists it. It names the memory it went into (when visible).
        merged = eng.duplicate_merged_into(scope, memory_id)
        if merged is None:
            raise
        return page("merged.html", merged=merged, memory_id=memory_id)
    if item.id != memory_id:  # an old record id: show the record that replaced it
        return done(f"/memories/{item.id}")
    revisions = eng.revisions(scope, item.id)
    a, b, wrong = _revision_pair(revisions)
    wrong = wrong if item.kind == "document" else None  # a record shows no revisions to compare
    return page(
        "memory.html", http_status=400 if wrong else 200, item=item, revisions=revisions, a=a, b=b,
        diff=_diff(revisions, a, b), diff_error=wrong,
        provenance=eng.provenance(scope, item.id, token=token),
        events=eng.curation_events(token=token, memory_id=item.id, limit=50),
        recalls=eng.recall_history(scope, item.id, token=token),
        narrower=[aud for aud in ("personal",) if item.audience == "team" and token.allows_audience(aud)],
        too_long=eng.beyond_injection(item.title, item.body),
        recalled_for=eng.recalled_for(item),
        replaced=eng.superseded(scope, item.id) if item.kind == "record" else [],
    )


@bp.get("/memories/<memory_id>/diff")
def diff(memory_id: str):
    eng, scope = engine(), viewer_scope()
    item = eng.memory(scope, memory_id)
    revisions = eng.revisions(scope, item.id)
    a, b, wrong = _revision_pair(revisions)
    if wrong:  # the refusal in place of the diff, not another pair of revisions
        return page("memory_diff.html", "_diff.html", http_status=400, item=item, revisions=revisions, a=None,
                    b=None, diff=None, diff_error=wrong)
    return page("memory_diff.html", "_diff.html", item=item, revisions=revisions, a=a, b=b,
                diff=_diff(revisions, a, b))


@bp.get("/memories/<memory_id>/edit")
def edit_form(memory_id: str):
    item = engine().memory(viewer_scope(), memory_id)
    mode = "replace" if request.args.get("mode") == "replace" else "rewrite"
    return page("memory_edit.html", "_edit.html", item=item, mode=mode, form={}, error=None)


@bp.post("/memories/<memory_id>/edit")
def edit(memory_id: str):
    eng, scope = engine(), viewer_scope()
    item = eng.memory(scope, memory_id)
    mode = "replace" if request.form.get("mode") == "replace" else "rewrite"
    form = {k: request.form.get(k, "") for k in ("title", "content", "old_text", "new_text", "base")}
    now_at = f"{item.id}:{item.revision}"
    if form["base"] and form["base"] != now_at:
        # Changed since this editor opened (another tab, an agent, curation): saved, it would have
        # replaced that change without a word (a walk's second editor undid the first's correction).
        form["base"] = now_at  # saved again from here, it replaces the change knowingly
        now_says = item.body if len(item.body) <= 300 else item.body[:300].rsplit(" ", 1)[0] + "…"
        return page("memory_edit.html", "_edit.html", http_status=422, item=item, mode=mode, form=form,
                    error=f"Not saved: this memory changed since you opened the editor. It now says: "
                          f"“{now_says}” Your text is kept here: save again to replace that, or Cancel to keep it.")
    # What the engine would refuse, said in the words of this form (its messages name the API's fields).
    # A NUL is looked for here, field by field: the engine takes a kept title from the new text's first
    # sentence and checks that title first, so its message blames the title for a NUL in the text.
    held = next((words for key, words in EDIT_FIELDS[mode] if "\x00" in form[key]), None)
    if held:
        return page("memory_edit.html", "_edit.html", http_status=422, item=item, mode=mode, form=form,
                    error=f"{held} holds a control or invisible character (NUL, \\u0000): remove it.")
    if mode == "rewrite" and not form["content"].strip():
        return page("memory_edit.html", "_edit.html", http_status=422, item=item, mode=mode, form=form,
                    error="The text is empty: to remove this memory, delete it as wrong.")
    if mode == "replace" and (not form["old_text"] or form["old_text"] not in item.body):
        return page("memory_edit.html", "_edit.html", http_status=422, item=item, mode=mode, form=form,
                    error="The text to find is not in this memory: copy it exactly (case matters).")
    try:
        if mode == "replace":
            result = eng.update(scope, item.id, old_text=form["old_text"], new_text=form["new_text"], source="ui")
        else:
            title = form["title"].strip()
            result = eng.update(scope, item.id, new_content=form["content"],
                                title=title if title and title != item.title else None, source="ui")
    except EngineError as exc:
        return page("memory_edit.html", "_edit.html", http_status=422, item=item, mode=mode, form=form,
                    error=exc.message)
    if result.action == "blocked":  # the secret rule refused the new text: keep the editor and say why
        return page("memory_edit.html", "_edit.html", http_status=422, item=item, mode=mode, form=form,
                    error=f"Not saved: {result.reason}.")
    return done(f"/memories/{result.new_id or item.id}")


@bp.post("/memories/<memory_id>/revert")
def revert(memory_id: str):
    eng, scope = engine(), viewer_scope()
    revision = page_int(request.form.get("revision"))
    if revision is None:
        raise InvalidInput("pick the revision to revert to (a number from the revision list)")
    eng.revert(scope, memory_id, revision)
    return done(f"/memories/{memory_id}")


@bp.route("/memories/<memory_id>/delete", methods=["GET", "POST"])
def delete(memory_id: str):
    """GET asks (a dialog that says what deleting as wrong means); POST deletes."""
    eng, scope = engine(), viewer_scope()
    item = eng.memory(scope, memory_id)
    if request.method == "GET":
        return dialog("_confirm_delete.html", items=[item], action_url=f"/memories/{item.id}/delete", values=None)
    eng.update(scope, item.id, delete=True, reason="deleted as wrong in the browser", source="ui")
    return done("/memories?deleted=1")


@bp.route("/memories/<memory_id>/merge", methods=["GET", "POST"])
def merge(memory_id: str):
    """A memory that repeats another: GET finds the one it repeats (a search among the living
    documents of its audience and boundary); POST asks first, naming both, then merges it in
    (Engine.merge_duplicate: no tombstone, and what it adds is appended)."""
    eng, scope = engine(), viewer_scope()
    item = eng.memory(scope, memory_id)
    if request.method == "GET":
        q = (request.args.get("q") or "").strip()
        found = []
        if q:
            flt = MemoryFilter(audience=item.audience, boundary=item.boundary)
            found = [m for m in eng.search_memories(scope, q, flt=flt, limit=MERGE_CHOICES + 1)
                     if m.id != item.id and m.kind == "document"][:MERGE_CHOICES]
        return page("merge.html", item=item, q=q, found=found)
    into = eng.memory(scope, request.form.get("into") or "")
    if not confirmed():
        return confirm(f"Merge “{item.title}” into “{into.title}”?",
                       f"“{item.title}” is deleted as a duplicate, not as wrong: what it says stays true and may "
                       f"be learnt again. Whatever of it “{into.title}” does not already say is added to it, as a "
                       "new revision.", action_url=f"/memories/{item.id}/merge", button="Merge",
                       back_url=f"/memories/{item.id}/merge", fields=[("into", into.id)])
    eng.merge_duplicate(scope, item.id, into.id)
    return done(f"/memories/{into.id}")


@bp.post("/memories/<memory_id>/audience")
def narrow(memory_id: str):
    """Asks first (no page can widen an audience again), then moves the memory to the narrower one."""
    eng, scope = engine(), viewer_scope()
    item = eng.memory(scope, memory_id)
    audience = request.form.get("audience", "")
    if not confirmed():
        return confirm(f"Make “{item.title}” {audience}?", narrowing_text(audience, 1),
                       action_url=f"/memories/{item.id}/audience", button=f"Make {audience}",
                       back_url=f"/memories/{item.id}", fields=[("audience", audience)])
    eng.narrow_audience(scope, [item.id], audience, token=viewer_token())
    return done(f"/memories/{item.id}")


def narrowing_text(audience: str, n: int) -> str:
    it = "it" if n == 1 else "them"
    return (f"Only {audience} sessions will see {it} from now on: agents in wider sessions no longer find or "
            f"recall {it}. No page can widen an audience again.")
