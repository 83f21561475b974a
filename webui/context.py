"""What a view reaches through the app it runs in: the Engine it serves.

Its own module, beside app.py: app.py imports the blueprints, and the blueprints' views need the
accessor, so keeping it in app.py would be an import cycle.
"""

from __future__ import annotations

from flask import current_app

from keepmind.engine import Engine

EXTENSION = "keepmind.engine"


def engine() -> Engine:
    """The Engine the current app serves."""
    return current_app.extensions[EXTENSION]


__all__ = ["EXTENSION", "engine"]
