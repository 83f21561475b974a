"""How a page answers: the whole page, or its fragment when htmx asks (the same URL either way).

A request with `HX-Request: true` (and not a history restore) gets the fragment template; any
other request gets the full page, which includes the same fragment. Every answer says
`Vary: HX-Request` so nothing caches one for the other. After a change, `done(url)` sends the
browser on: a 303 for a plain form, `HX-Redirect` for htmx.
"""

from __future__ import annotations

import json
import re
import shlex
from datetime import datetime, time, timedelta
from urllib.parse import urlparse

from flask import Flask, current_app, g, make_response, redirect, render_template, request
from markupsafe import Markup, escape

from keepmind.engine import InvalidInput
from keepmind.engine.wording import counted as plural
from keepmind.engine.wording import reason_words
from keepmind.engine.writepath.entities import ROLES  # the template filter; tests read it by this name

from ..context import EXTENSION
from ..security import is_owner


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true" and request.headers.get("HX-History-Restore-Request") != "true"


def page(template: str, fragment: str | None = None, http_status: int = 200, **context):
    """The full `template`, or `fragment` for htmx; both get the same context."""
    name = fragment if (fragment and is_htmx()) else template
    response = make_response(render_template(name, **context), http_status)
    response.headers["Vary"] = "HX-Request"
    return response


def done(url: str):
    """After a change: go to `url` (303 for a plain form post; htmx loads it as a whole page)."""
    if is_htmx():
        response = make_response("", 200)
        response.headers["HX-Redirect"] = url
        return response
    return redirect(url, 303)


def dialog(template: str, **context):
    """A confirmation: for htmx, swapped into the page's dialog slot; otherwise a whole page."""
    if is_htmx():
        response = make_response(render_template(template, **context))
        response.headers["HX-Retarget"] = "#dialog-slot"
        response.headers["HX-Reswap"] = "innerHTML"
        response.headers["Vary"] = "HX-Request"
        return response
    return page("confirm.html", dialog_template=template, **context)


def confirmed() -> bool:
    """Whether the person said yes to the action's confirmation (the form carries confirmed=yes)."""
    return request.form.get("confirmed") == "yes"


def confirm(heading: str, text: str, *, action_url: str, button: str, back_url: str, fields=(),
            target: str | None = None, swap: str | None = None, include: str | None = None):
    """Ask before an action the pages cannot undo: a dialog (a page without htmx) whose form posts
    `fields` and confirmed=yes back to `action_url`, into `target` as the action's own form would."""
    return dialog("_confirm_action.html", heading=heading, text=text, action_url=action_url, button=button,
                  back_url=back_url, fields=list(fields), target=target, swap=swap, include=include)


# -- small readers of query strings and forms --------------------------------------------------


def choice(value: str | None, allowed) -> str | None:
    """A filter value from a query string: one of `allowed`, or None for "any"."""
    value = (value or "").strip()
    return value if value in allowed else None


def text(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def page_int(value: str | None) -> int | None:
    """A page link's number (a cursor's time, a revision): ASCII digits within SQLite's integers,
    else None. `str.isdigit` takes "²" (which int() refuses) and 20 digits overflowed the query."""
    value = (value or "").strip()
    if not value.isascii() or not value.isdigit() or len(value) > 15:
        return None
    return int(value)


def safe_path(target: str | None) -> str:
    """`target` if it is a path on this server, else "/": never `//elsewhere`, a full URL, or one
    holding a space or control character (browsers and Werkzeug drop a tab, so `/\t/evil.example`
    became `//evil.example`; a newline made the redirect a 500)."""
    if (not target or not target.startswith("/") or target[1:2] in ("/", "\\") or "\\" in target
            or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 or 0x80 <= ord(ch) < 0xa0 for ch in target)):
        return "/"
    return target


def day_end_ms(value: str | None) -> int | None:
    """The end of a day picked in a date field (local time), in epoch ms; None if empty."""
    value = (value or "").strip()
    if not value:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        raise InvalidInput("that date is not a date: pick one, like 2026-01-31") from None
    if day.year < 1970:  # before anything Keepmind holds; Linux took year 1 as a negative time, Windows failed
        raise InvalidInput("that date is out of range: pick one between 1970-01-01 and 9999-12-30")
    try:
        return int((datetime.combine(day.date(), time()) + timedelta(days=1)).timestamp() * 1000) - 1
    except (OverflowError, OSError):  # the day after 9999-12-31; before 1970 on Windows
        raise InvalidInput("that date is out of range: pick one between 1970-01-01 and 9999-12-30") from None


def today_start_ms() -> int:
    return int(datetime.combine(datetime.now().date(), time()).timestamp() * 1000)


# -- template filters -----------------------------------------------------------------------------


def when(ms: int | None) -> str:
    """Epoch ms as local date and time (what a person reads)."""
    if ms is None:
        return "—"
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def day(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d")


def iso(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="seconds")


def snippet(body: str, limit: int = 180) -> str:
    # curation's dated separator reads as words in one line ("… · earlier, as of 2026-05-01: …")
    body = _EARLIER.sub(lambda m: f" · {m.group(1)}: ", body or "")
    body = " ".join(body.split())
    return body if len(body) <= limit else body[: limit - 1].rstrip() + "…"


def dict_without(values: dict, key: str) -> dict:
    return {k: v for k, v in values.items() if k != key}


def settext(value) -> str:
    """A setting's value as a form field shows it (null is empty, objects as JSON)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _here() -> str:
    """The page to come back to after a header switch: this one, or for the answer to a form,
    the page the form was on."""
    if request.method == "GET":
        return request.full_path.rstrip("?")
    referrer = urlparse(request.referrer or "")
    return referrer.path if referrer.path.startswith("/") and referrer.netloc == request.host else "/"


def filesize(n: int | None) -> str:
    """Bytes as a person reads them (1 KB = 1024 bytes)."""
    if n is None:
        return "—"
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}".replace(".0 ", " ")
        size /= 1024
    return f"{n} bytes"


_FENCE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n(.*?)^\1[ \t]*$\n?", re.M | re.S)
_EARLIER = re.compile(r"^---\n_\[(earlier, as of [0-9-]+)\]_$\n?", re.M)  # mergeguard's dated separator
_RULE = re.compile(r"^(?:-{3,}|\*{3,})$\n?", re.M)
_CODE = re.compile(r"`([^`\n]+)`")
_STRONG = re.compile(r"\*\*([^*\n]+)\*\*")


def body_html(body: str | None) -> Markup:
    """A memory's text for the page: escaped first (it is hostile HTML), then the little Markdown
    memories hold shown as what it means: the dated separator curation writes between a newest
    statement and the earlier body, rules, fenced and inline code, bold. The text itself is kept
    as written (the page shows it with its line breaks)."""
    text = str(escape(body or ""))
    text = _FENCE.sub(lambda m: f'<pre class="code"><code>{m.group(2)}</code></pre>', text)
    text = _EARLIER.sub(lambda m: f'<span class="earlier">{m.group(1)}</span>', text)
    text = _RULE.sub('<hr class="rule">', text)
    text = _CODE.sub(r"<code>\1</code>", text)
    return Markup(_STRONG.sub(r"<strong>\1</strong>", text))


def ticks(message: str) -> Markup:
    """A message for a person (an error, a notice): escaped, its `commands` shown as code."""
    return Markup(_CODE.sub(r"<code>\1</code>", str(escape(message or ""))))


def is_role(relation: str) -> bool:
    """A relation that names who the other is (sister, manager): read "Anna is User's sister"."""
    return (relation or "").replace("_", " ") in ROLES


def shquote(value: str) -> str:
    """A value as one word of a shell command line (a boundary with a space is quoted)."""
    return shlex.quote(str(value))


_MERGED = re.compile(r"merged ((?:doc|rec)-[0-9a-f]{32})")


def merged_id(reason: str | None) -> str | None:
    """The duplicate a revision merged in ("merged doc-…", Engine.merge_duplicate), whose old page
    says what it said and where it went; None for any other reason."""
    found = _MERGED.fullmatch(reason or "")
    return found.group(1) if found else None


def install(app: Flask) -> None:
    app.jinja_env.filters.update(when=when, day=day, iso=iso, snippet=snippet, dict_without=dict_without,
                                 settext=settext, filesize=filesize, reason_words=reason_words,
                                 body_html=body_html, ticks=ticks, plural=plural, shquote=shquote,
                                 is_role=is_role, merged_id=merged_id)
    app.jinja_env.autoescape = True  # every template, whatever its name: memory text is hostile HTML

    @app.context_processor
    def signed_in():
        """What every page's header shows: who is signed in, the pause switch, review waiting."""
        session = getattr(g, "browser_session", None)
        viewer = getattr(g, "viewer_token", None)
        out = {"viewer": viewer, "csrf_token": session.csrf if session else "", "owner": is_owner(viewer),
               "paused_since": None, "review_waiting": 0, "here": _here(),
               "can_quit": current_app.config.get("KEEPMIND_SHUTDOWN") is not None}
        if viewer is not None and not getattr(g, "engine_stopping", False):
            eng = current_app.extensions[EXTENSION]
            out["paused_since"] = eng.paused_since()
            out["review_waiting"] = eng.review_waiting(token=viewer)
        return out


__all__ = ["choice", "day_end_ms", "dialog", "done", "install", "is_htmx", "page", "text", "today_start_ms"]
