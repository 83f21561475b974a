"""The URL the tray (and a second launch) opens in the browser for a person.

The one seam for signing in: today it returns the running server's page URL. Issue 13 (the
browser UI, part 1) builds the one-time sign-in link (`keepmind open`): when it lands, this
function returns that link for the instance at `url` (signed in, landing on `page`), and every
caller (the tray's Open Keepmind and Run doctor, a second `keepmind` launch) opens the browser
already signed in.
"""

from __future__ import annotations

from pathlib import Path


def open_url(home: Path, url: str, page: str = "/") -> str:
    """What to open for the running Keepmind of `home` serving at `url` (issue 13 wires sign-in)."""
    return url.rstrip("/") + (page if page.startswith("/") else "/" + page)


__all__ = ["open_url"]
