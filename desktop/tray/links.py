"""The URL the tray (and a second launch) opens in the browser for a person: a one-time link that
signs the browser in (the local token's view) and lands on `page`.

The link is made by the running server (`POST /api/v1/ui/links`, as `keepmind open` does), after
the client has checked that the server is the one this data dir's server.json names. When no
link can be had (the server is not answering yet), the plain page URL is opened and the login
page asks for a token.
"""

from __future__ import annotations

from pathlib import Path

from keepmind.engine import EngineError


def open_url(home: Path, url: str, page: str = "/") -> str:
    """What to open for the running Keepmind of `home` serving at `url`."""
    from ..process.client import DaemonClient

    page = page if page.startswith("/") else "/" + page
    client = DaemonClient.from_home(home)
    if client is not None:
        try:
            return client.post("/ui/links", {"next": page} if page != "/" else {})["url"]
        except EngineError:
            pass  # not answering as expected: fall back to the plain page, which asks for a token
        finally:
            client.close()
    return url.rstrip("/") + page


__all__ = ["open_url"]
