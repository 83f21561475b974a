"""The tray's images, read from the installed `keepmind.icons` package (also inside a PyInstaller build)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

STATES = ("healthy", "degraded", "paused")
SIZES = (16, 22, 32, 64)


def icon_file(state: str, size: int = 64) -> Path:
    """The PNG of a state at a size; a real file (importlib.resources of an installed package)."""
    if state not in STATES or size not in SIZES:
        raise ValueError(f"no icon for {state!r} at {size} px")
    return Path(str(resources.files("keepmind.icons") / f"keepmind-{state}-{size}.png"))


def icon_image(state: str, size: int = 64):
    """A PIL image of the state's icon (pystray draws PIL images; 64 px scales down cleanly)."""
    from PIL import Image

    with Image.open(icon_file(state, size)) as image:
        return image.convert("RGBA")


__all__ = ["SIZES", "STATES", "icon_file", "icon_image"]
