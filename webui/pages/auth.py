"""Signing in and out: the one-time link from `keepmind open`, a pasted API token, sign-out.

The session cookie is HttpOnly (no script reads it), SameSite=Strict (no other site's page
sends it) and Path=/. The login form has no session yet, so its CSRF token is the HMAC of a
random nonce kept in its own short-lived cookie (a signed double submit); the Origin and
Sec-Fetch-Site checks of security.py apply to it as to every POST.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from flask import Blueprint, current_app, g, make_response, redirect, request

from ..context import engine
from ..security import SESSION_COOKIE, public, signins
from ..signin import SESSION_TTL_S
from .render import page, safe_path

bp = Blueprint("auth", __name__)
LOGIN_COOKIE = "km_login"


def _login_csrf(nonce: str) -> str:
    return hmac.new(current_app.config["KEEPMIND_PAGE_KEY"], nonce.encode(), hashlib.sha256).hexdigest()


def _safe_next(target: str | None) -> str:
    """Only a path on this server (render.safe_path)."""
    return safe_path(target)


def _signed_in(token_id: str, target: str):
    session_id, _ = signins().open_session(token_id)
    response = redirect(_safe_next(target), 303)
    response.set_cookie(SESSION_COOKIE, session_id, max_age=int(SESSION_TTL_S), httponly=True, samesite="Strict",
                        path="/")
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    return response


def _login_page(error: str | None = None, status: int = 200):
    nonce = secrets.token_urlsafe(24)
    response = page("login.html", http_status=status, error=error, login_csrf=_login_csrf(nonce),
                    next=_safe_next(request.values.get("next")))
    response.set_cookie(LOGIN_COOKIE, nonce, max_age=1800, httponly=True, samesite="Strict", path="/login")
    return response


@bp.get("/login")
@public
def login():
    if g.viewer_token is not None:
        return redirect(_safe_next(request.args.get("next")), 303)
    return _login_page()


@bp.post("/login")
@public
def login_with_token():
    nonce = request.cookies.get(LOGIN_COOKIE) or ""
    sent = request.form.get("csrf_token") or ""
    if not nonce or not hmac.compare_digest(sent.encode("utf-8", "replace"), _login_csrf(nonce).encode()):
        return _login_page("This form expired: paste the token again.", 403)
    token = engine().verify_token((request.form.get("token") or "").strip())
    if token is None:
        return _login_page("That is not a live API token. `keepmind token show` prints the local token; "
                           "`keepmind open` signs you in without one.", 401)
    return _signed_in(token.id, request.form.get("next"))


@bp.get("/signin")
@public
def sign_in_link():
    token_id = signins().redeem(request.args.get("code"))
    if token_id is None and g.viewer_token is not None:
        # the link said again in a browser it signed in already (a reload, a bookmark): on it goes
        return redirect(_safe_next(request.args.get("next")), 303)
    if token_id is None:
        return _login_page("This sign-in link was used already, has expired (links last 60 seconds) or is "
                           "not one Keepmind made. Run `keepmind open` for a new one.", 403)
    return _signed_in(token_id, request.args.get("next"))


@bp.post("/signout")
def sign_out():
    signins().close(request.cookies.get(SESSION_COOKIE))
    response = make_response(redirect("/login", 303))
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response
