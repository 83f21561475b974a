"""Settings (`/settings`): every documented key grouped as docs/settings.md groups them, with its
description, default and current value; saved per group (validated with the same errors as the
file, written atomically, the file's other keys kept), saying which changes apply at once and
which at the next start; the LLM's key is never shown or asked for, only the variable holding it;
a connection test for the curation LLM."""

from __future__ import annotations

import re

from flask import Blueprint, request

from keepmind.engine import EngineError, InvalidInput

from ..context import engine
from ..security import require_owner
from .render import done, is_htmx, page

bp = Blueprint("settings", __name__)


@bp.before_request
def owners_only():
    require_owner()


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _context(**extra) -> dict:
    eng = engine()
    groups = eng.setting_views()
    return {"groups": groups, "slug": slug, "file_problem": eng.settings_problem(), "llm_key": eng.llm_key(),
            "path": str(eng.settings_path), "result": None, "group_done": None, "submitted": {}, "error": None,
            "field_errors": {}, "first_bad": None, "test": None, **extra}


def _group(title: str, **extra):
    """The page, or for htmx just the group `title`'s form."""
    context = _context(**extra)
    context["group"] = next(((t, items) for t, items in context["groups"] if slug(t) == slug(title)), None)
    return context


@bp.get("/settings")
def settings():
    return page("settings.html", **_context())


@bp.post("/settings")
def save():
    eng = engine()
    title = request.form.get("group") or ""
    if not any(slug(t) == slug(title) for t, _ in eng.setting_views()):
        raise InvalidInput("that settings form is not one of this page's: reload the page and try again")
    submitted = {k: v for k, v in request.form.items() if k not in ("csrf_token", "group")}
    changes = eng.changed_settings(submitted)
    if not changes:
        context = _group(title, group_done=title, result={"now": [], "later": []})
        return page("settings.html", "_settings_group.html", **context)
    try:
        now, later = eng.change_settings(changes)
    except EngineError as exc:
        # Each bad value's message stands under its field (the first takes the focus); an error
        # naming no field of the form (the file itself is broken) stands by the button.
        field_errors = {k: m for k, m in getattr(exc, "problems", {}).items() if k in changes}
        if not field_errors:
            key = next((k for k in changes if repr(k) in exc.message), None)
            field_errors = {key: exc.message} if key else {}
        context = _group(title, group_done=title, error=exc.message, field_errors=field_errors,
                         first_bad=next(iter(field_errors), None), submitted=submitted)
        return page("settings.html", "_settings_group.html", http_status=422, **context)
    if not is_htmx():
        return done(f"/settings#group-{slug(title)}")
    return page("settings.html", "_settings_group.html",
                **_group(title, group_done=title, result={"now": now, "later": later}))


@bp.post("/settings/test-llm")
def test_llm():
    """Ask the curation LLM saved in keepmind.json for one word (a POST: it calls out and counts)."""
    result = engine().test_llm()
    return page("settings.html", "_llm_test.html", **_context(test=result))
