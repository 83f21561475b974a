"""Who can read what (`/scoping`): sessions with their audience, boundary and token; API tokens
(create: the secret is shown once; revoke); the read rules; and "view as" an audience and
boundary, or a token: exactly the memories, anchors and edges it would see, read through the
same visibility rule as every other read (Engine.view_as / Engine.viewer)."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, request

from keepmind.engine import AUDIENCES, EngineError, NotFound

from ..context import engine
from ..errors import Forbidden
from ..security import local_token_id, refuse_revoking_the_local_token, viewer_token
from .render import confirm, confirmed, done, is_htmx, page, page_int, today_start_ms

bp = Blueprint("scoping", __name__)
SESSIONS_SHOWN = 50
VIEW_SHOWN = 20


def _int(value: str | None) -> int | None:
    return page_int(value)


def _tokens(**extra) -> dict:
    """What the tokens section shows (its own fragment after a create)."""
    eng, viewer = engine(), viewer_token()
    tokens = eng.list_tokens(include_revoked=True, by=viewer)
    return {"tokens": tokens, "audiences": [a for a in AUDIENCES if viewer.allows_audience(a)], "created": None,
            "revoked": None, "form": {}, "error": None, "port": request.host.rsplit(":", 1)[-1],
            "local_token_id": local_token_id(), **extra}


def _names_in_reach(eng, viewer) -> dict:
    """The boundaries and read rules this viewer may know of: all of them for a token of any
    boundary; else its own boundaries and the rules that name what they read (a token limited to
    `work` was shown every boundary in the store in the View as picker)."""
    policy, boundaries = eng.settings["policy.cross_boundary_reads"] or {}, eng.boundaries_in_use()
    if not viewer.any_boundary:
        own = set(viewer.boundaries)
        boundaries = [b for b in boundaries if b in own] or sorted(own)
        policy = {b: others for b, others in policy.items() if b in own}
    return {"policy": policy, "boundaries": boundaries}


def _context(**extra) -> dict:
    """The whole page: sessions (keyset pages by `before`), tokens, the read rules, view as."""
    eng, viewer = engine(), viewer_token()
    before = _int(request.args.get("before"))
    sessions = eng.sessions(token=viewer, limit=SESSIONS_SHOWN + 1, before=before)
    out = _tokens()
    out.update({
        "sessions": sessions[:SESSIONS_SHOWN],
        "next_before": sessions[SESSIONS_SHOWN - 1]["created_at"] if len(sessions) > SESSIONS_SHOWN else None,
        "before": before, "token_names": {t.id: t.name for t in out["tokens"]},
        **_names_in_reach(eng, viewer),
        "view": None,
    })
    out.update(extra)
    return out


def _either(**extra) -> dict:
    """The fragment's context for htmx (just the tokens section), else the whole page's."""
    return _tokens(**extra) if is_htmx() else _context(**extra)


@bp.get("/scoping")
def scoping():
    return page("scoping.html", **_context())


@bp.post("/tokens")
def create_token():
    """A new token; its secret is in this answer only (never stored, never shown again)."""
    eng = engine()
    form = {k: (request.form.get(k) or "").strip() for k in ("name", "ceiling", "boundaries")}
    named = [b.strip() for b in form["boundaries"].split(",") if b.strip()]
    try:
        if form["boundaries"] and not named:
            # " , ," names no boundary: read as empty it would make the widest token there is
            raise EngineError("the boundaries hold only commas and spaces: name the boundaries, separated by "
                              "commas, or leave the field empty for every boundary")
        created = eng.create_token(form["name"], form["ceiling"], named or ["*"], by=viewer_token())
    except EngineError as exc:
        return page("scoping.html", "_tokens.html", http_status=422, **_either(error=exc.message, form=form))
    # the MCP line names this Keepmind's data dir: `keepmind mcp` alone uses KEEPMIND_HOME or the
    # platform's default, which need not be the store this page is of (one started with --home)
    return page("scoping.html", "_tokens.html", **_either(created=created, data_dir=str(Path(eng.home).resolve())))


@bp.post("/tokens/<token_id>/revoke")
def revoke_token(token_id: str):
    viewer = viewer_token()
    refuse_revoking_the_local_token(token_id, viewer)
    if token_id == viewer.id:
        raise Forbidden("you are signed in with this token: revoke it from a page signed in with another token, "
                        "or with `keepmind token revoke`")
    if not confirmed():
        token = next((t for t in engine().list_tokens(by=viewer) if t.id == token_id and not t.revoked_at), None)
        if token is None:
            raise NotFound("no such live token that you may revoke")
        return confirm(f"Revoke {token.name}?", "The API refuses it from now on and pages signed in with it are "
                       "signed out. A revoked token cannot be used again: make a new one if it is needed.",
                       action_url=f"/tokens/{token_id}/revoke", button=f"Revoke {token.name}",
                       back_url="/scoping#tokens", target="#tokens-body")
    revoked = engine().revoke_token(token_id, by=viewer)
    if not is_htmx():
        return done("/scoping#tokens")
    return page("scoping.html", "_tokens.html", **_tokens(revoked=revoked))


def _view_scope():
    """The scope "view as" asks for: a token's (one no wider than the viewer's), or an audience and
    boundary's, as far as the viewer may look; (scope, what it is called)."""
    eng, viewer = engine(), viewer_token()
    token_id = (request.args.get("token") or "").strip()
    if token_id:
        token = next((t for t in eng.list_tokens(by=viewer) if t.id == token_id), None)
        if token is None:
            raise NotFound("no such live token that you may look through")
        bounds = "every boundary" if token.any_boundary else ", ".join(token.boundaries)
        return eng.viewer(token), f"the token {token.name} ({token.audience_ceiling} ceiling, {bounds})"
    audience = (request.args.get("audience") or "").strip()
    boundary = (request.args.get("boundary") or "").strip()
    scope = eng.view_as(audience, boundary, token=viewer)
    extra = f", which also reads {', '.join(scope.extra_boundaries)}" if scope.extra_boundaries else ""
    return scope, f"a {audience} session in {boundary}{extra}"


@bp.get("/scoping/view")
def view_as():
    eng = engine()
    args = {k: v for k, v in request.args.items() if k in ("token", "audience", "boundary")}
    try:
        scope, label = _view_scope()
    except EngineError as exc:
        # Said where the form is, with or without htmx (a bare GET is also how the form goes before
        # htmx has bound it), and the boundary marked when it is what is missing.
        missing = None if args.get("token") or (args.get("boundary") or "").strip() else "boundary"
        view = {"error": exc.message, "args": args, "invalid": missing}
        return page("scoping.html", "_view_as.html", http_status=422,
                    **({"view": view} if is_htmx() else _context(view=view)))
    view = {
        "label": label, "scope": scope, "counts": eng.counts(scope, since=today_start_ms()),
        "memories": eng.browse(scope, limit=VIEW_SHOWN).items, "anchors": eng.anchors(scope, limit=VIEW_SHOWN),
        "edges": eng.visible_edges(scope, limit=VIEW_SHOWN), "shown": VIEW_SHOWN,
        "args": args,
    }
    return page("scoping.html", "_view_as.html", **({"view": view} if is_htmx() else _context(view=view)))
