"""Every defence of the localhost server, in one place.

A server on 127.0.0.1 is still reachable from every web page the user opens (cross-site
requests, DNS rebinding) and from every local process, so each request passes, in order:
1. the Host allowlist: only the server's own `127.0.0.1:<port>` or `localhost:<port>`;
2. on state-changing methods, no cross-site `Origin` and no cross-site `Sec-Fetch-Site`;
3. the body size limit (`server.max_body_bytes`);
4. on `/api/...`, a bearer token that verifies (stored hashed; Engine.verify_token), except on a
   route declared public (only /api/v1/hello: the instance proof below).
The session-scope check (a token never acts through a session wider than its ceiling) is
`session_scope`, called by every session route; the rule itself is Engine.scope's.

The pages a person opens pass 1-3 too, then:
5. a browser session (an HttpOnly, SameSite=Strict cookie made by a one-time sign-in link or a
   pasted token; signin.py), unless the view is marked `public` (the sign-in pages);
6. on state-changing methods, the session's CSRF token, sent by htmx in the X-CSRF-Token header
   (static/app.js reads it from a meta tag) or by a plain form as the `csrf_token` field.
Every answer carries a Content-Security-Policy that allows only this server's own scripts and
styles (no inline script or style), and is never framed, cached or sent on to another site as a referrer.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import quote

from flask import Flask, current_app, g, make_response, redirect, request
from werkzeug.exceptions import RequestEntityTooLarge

from keepmind.engine import NotFound, Scope, Token

from .context import engine
from .errors import Forbidden, Unauthorized
from .signin import BrowserSession, SignIns

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SAME_SITE_FETCH = frozenset({"same-origin", "none"})
SIGNINS = "keepmind.signins"
SESSION_COOKIE = "km_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def bind_port(app: Flask, port: int) -> None:
    """Tell the app the port it is served on (known only after the socket is bound)."""
    app.config["KEEPMIND_PORT"] = int(port)


def bind_instance(app: Flask, nonce: str) -> None:
    """The random key of this start of the server, also written into the data dir's server.json."""
    app.config["KEEPMIND_NONCE"] = nonce


def instance_proof(nonce: str, challenge: str) -> str:
    """HMAC-SHA256 of a client's challenge under the instance key.

    Only a process that read server.json (owner-only) or was started with it can answer a fresh
    challenge, so a client checks the server before it sends the token: a stale server.json (a
    crash) may name a port another program listens on now.
    """
    return hmac.new(nonce.encode("utf-8"), challenge.encode("utf-8"), hashlib.sha256).hexdigest()


def allowed_hosts(port: int | None) -> frozenset[str]:
    if not port:
        return frozenset()
    return frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})


def allowed_origins(port: int | None) -> frozenset[str]:
    return frozenset(f"http://{h}" for h in allowed_hosts(port))


def check_host() -> None:
    host = (request.headers.get("Host") or "").strip().lower()
    if host not in allowed_hosts(current_app.config.get("KEEPMIND_PORT")):
        raise Forbidden("this server answers only to its own address (127.0.0.1 or localhost with its "
                        "port): the Host header names another site")


def check_origin() -> None:
    if request.method in SAFE_METHODS:
        return
    fetch_site = request.headers.get("Sec-Fetch-Site")
    if fetch_site is not None and fetch_site.strip().lower() not in SAME_SITE_FETCH:
        raise Forbidden("cross-site requests cannot change anything here (Sec-Fetch-Site is "
                        f"{fetch_site!r}); call the API from a local program, not a web page")
    origin = request.headers.get("Origin")
    if origin is not None and origin.strip().lower() not in allowed_origins(current_app.config.get("KEEPMIND_PORT")):
        raise Forbidden("cross-site requests cannot change anything here (the Origin header names "
                        "another site); call the API from a local program, not a web page")


def check_body_size() -> None:
    limit = current_app.config.get("MAX_CONTENT_LENGTH")
    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    if getattr(view, "upload", False):  # a page that takes files: its own, larger limit
        limit = current_app.config.get("KEEPMIND_MAX_UPLOAD") or limit
        request.max_content_length = limit
    if limit and request.content_length is not None and request.content_length > limit:
        raise RequestEntityTooLarge()


def bearer_secret() -> str | None:
    header = request.headers.get("Authorization") or ""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def authenticate() -> Token:
    secret = bearer_secret()
    if secret is None:
        raise Unauthorized("missing API token: send `Authorization: Bearer <token>` "
                           "(`keepmind token show` prints the local token)")
    token = engine().verify_token(secret)
    if token is None:
        raise Unauthorized("invalid or revoked API token: `keepmind token show` prints the local "
                           "token, `keepmind token create` makes a new one")
    engine().touch_token(token)
    return token


# -- the pages: browser sessions and CSRF ---------------------------------------------------------


def public(view):
    """Mark a page view as open without signing in (the sign-in pages themselves)."""
    view.public = True
    return view


def upload(view):
    """Mark a page view that takes files: server.max_upload_bytes instead of server.max_body_bytes."""
    view.upload = True
    return view


def is_owner(token: Token | None) -> bool:
    """The local token's reach (personal, every boundary): what acts on the whole store needs it."""
    return token is not None and token.audience_ceiling == "personal" and token.any_boundary


def require_owner() -> None:
    """Pages that act on the whole store (pause, quit, settings, models, export and import, doctor)."""
    if not is_owner(getattr(g, "viewer_token", None)):
        raise Forbidden("this page acts on the whole store: sign in with the local token (`keepmind open`) "
                        "to use it; a token with a narrower reach sees only its own memories")


def local_token_id() -> str | None:
    """The id of the token in <home>/token, as the host named it (None: no host said)."""
    return current_app.config.get("KEEPMIND_LOCAL_TOKEN_ID")


def refuse_revoking_the_local_token(token_id_or_name: str, by: Token) -> None:
    """Forbidden for the local token (the one in <home>/token, named by the host as
    `local_token_id`): Keepmind's own commands, the tray, MCP and the hooks use it while this
    server runs, so revoking it here would cut them all off. The CLI replaces it, stopped.
    A caller narrower than it is left to the revoke's own refusal, which names nothing."""
    local_id = local_token_id()
    if local_id is None:
        return
    try:
        token = engine().get_token(token_id_or_name)
    except NotFound:  # the revoke's own refusal says so, as it says of one wider than `by`
        return
    if token.id == local_id and by.covers(token):
        raise Forbidden(f"{token.name} is the local token: Keepmind's own commands, the tray, MCP and the hooks "
                        "use it while Keepmind runs. To replace it, stop Keepmind (`keepmind stop`), then run "
                        f"`keepmind token revoke {token.name}`")


def signins() -> SignIns:
    return current_app.extensions[SIGNINS]


def browser_viewer() -> tuple[Token, BrowserSession] | None:
    """The token and browser session of this request's cookie, if it is live (and its token too)."""
    session = signins().session(request.cookies.get(SESSION_COOKIE))
    if session is None:
        return None
    try:
        token = engine().get_token(session.token_id)
    except NotFound:
        return None
    if token.revoked_at is not None:  # revoking a token signs its pages out
        signins().close(request.cookies.get(SESSION_COOKIE))
        return None
    return token, session


def check_csrf(session: BrowserSession) -> None:
    sent = request.headers.get(CSRF_HEADER) or request.form.get(CSRF_FIELD) or ""
    if not hmac.compare_digest(sent.encode("utf-8", "replace"), session.csrf.encode()):
        raise Forbidden("this form has expired or did not come from Keepmind's own page: reload the page and "
                        "try again")


def _sign_in_first():
    """Send a person who is not signed in to the login page (htmx: a full-page redirect)."""
    target = "/login?next=" + quote(request.full_path.rstrip("?"), safe="/") if request.method == "GET" else "/login"
    if request.headers.get("HX-Request") == "true":
        response = make_response("", 200)
        response.headers["HX-Redirect"] = target
        return response
    if request.method != "GET":
        raise Unauthorized("sign in first: `keepmind open` opens Keepmind in your browser, signed in")
    return redirect(target, 303)


def guard_page():
    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    if request.endpoint == "static" or view is None:
        return None  # static files, and unknown pages (404)
    found = browser_viewer()
    g.viewer_token, g.browser_session = found if found else (None, None)
    if getattr(view, "public", False):
        return None
    if found is None:
        return _sign_in_first()
    if request.method not in SAFE_METHODS:
        check_csrf(found[1])
    return None


def viewer_token() -> Token:
    return g.viewer_token


def viewer_scope() -> Scope:
    """What the signed-in person may see: the ceiling's tiers in the token's boundaries."""
    return engine().viewer(g.viewer_token)


def install(app: Flask, signin_clock=None) -> None:
    app.extensions[SIGNINS] = SignIns(signin_clock) if signin_clock else SignIns()

    @app.before_request
    def guard():
        check_host()
        check_origin()
        check_body_size()
        if request.path == "/api" or request.path.startswith("/api/"):
            view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
            if not getattr(view, "public", False):
                g.token = authenticate()
            return None
        return guard_page()

    @app.after_request
    def harden(response):
        # Answers may hold memories or a new token's secret: never cached, never sniffed as HTML.
        response.headers.setdefault("Cache-Control", "no-store")
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = CSP
        response.headers["Referrer-Policy"] = "same-origin"  # no-referrer would send `Origin: null` on our own posts
        response.headers["X-Frame-Options"] = "DENY"
        return response


def current_token() -> Token:
    return g.token


def session_scope(session_id: str) -> Scope:
    """The scope of a session as the calling token may use it (ScopeError beyond its ceiling).

    Checked on every session route: a session opened by another (wider) token is no way around
    the caller's ceiling. Cross-boundary reads granted by settings are kept only for boundaries
    the token may see (Engine.scope computes the rule).
    """
    return engine().scope(session_id, token=current_token())
