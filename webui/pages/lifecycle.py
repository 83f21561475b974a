"""The switches in every page's header: pause and resume memory (the same switch as `keepmind
pause` / `resume` and the tray's menu), and Quit Keepmind (for where the tray has no menu).

Both act on the whole store, so only the local token's reach may use them (security.require_owner).
Quit asks the host to stop through the app's `KEEPMIND_SHUTDOWN` callable (the Daemon sets it;
the host stops the server after this answer went out).
"""

from __future__ import annotations

from flask import Blueprint, current_app, request

from ..context import engine
from ..errors import Forbidden
from ..security import require_owner
from .render import dialog, done, page, safe_path

bp = Blueprint("lifecycle", __name__)


def _back() -> str:
    """The page the switch was pressed on (only a path of this server)."""
    return safe_path(request.form.get("next"))


@bp.post("/pause")
def pause():
    require_owner()
    engine().pause()
    return done(_back())


@bp.post("/resume")
def resume():
    require_owner()
    engine().resume()
    return done(_back())


@bp.route("/quit", methods=["GET", "POST"])
def quit_keepmind():
    """GET asks first (a dialog); POST tells the running process to stop."""
    require_owner()
    stop = current_app.config.get("KEEPMIND_SHUTDOWN")
    if stop is None:
        raise Forbidden("this Keepmind cannot be stopped from the page: stop the program that runs it")
    if request.method == "GET":
        return dialog("_confirm_quit.html")
    stop()  # only asks: the host's own loop stops the server, the workers and the database in order
    return page("stopped.html", bare=True)
