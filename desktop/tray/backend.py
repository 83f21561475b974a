"""pystray's backends and what we do about their gaps.

pystray picks its backend when it is imported: PYSTRAY_BACKEND if set, else on Linux AppIndicator
(needs PyGObject and the AppIndicator typelib), then GTK, then X11 (python-xlib); Cocoa on macOS,
win32 on Windows. The X11 fallback has no menu and no notifications, and in pystray 0.19.5 its
icon window never asks the X server for button events, so its left-click handler never runs:
`enable_xorg_click` adds ButtonPressMask, and a left click then runs the menu's default item
(Open Keepmind). It also draws without alpha, so its image is flattened onto a background first.
"""

from __future__ import annotations

import importlib

DARK = (48, 48, 48)  # the X11 fallback has no transparency: a neutral dark panel colour


def load_pystray():
    """The pystray module with a working backend; ImportError (with pystray's reasons) when this
    desktop has none (no display, no AppIndicator, no X)."""
    return importlib.import_module("pystray")


def backend_name(icon) -> str:
    """xorg, appindicator, gtk, darwin, win32, or dummy (pystray's base Icon: it cannot show anything)."""
    module = type(icon).__module__.rsplit(".", 1)[-1].lstrip("_")
    return "dummy" if module == "base" else module


def enable_xorg_click(icon) -> bool:
    """Let pystray's X11 icon receive its left click (True when it was the X11 backend)."""
    if backend_name(icon) != "xorg":
        return False
    import Xlib.X

    icon._window.change_attributes(event_mask=Xlib.X.ExposureMask | Xlib.X.StructureNotifyMask
                                   | Xlib.X.ButtonPressMask)
    icon._display.flush()
    return True


def flatten(image, background=DARK):
    """An RGB copy of an RGBA image composited on `background` (for a backend that ignores alpha)."""
    from PIL import Image

    base = Image.new("RGB", image.size, background)
    base.paste(image, mask=image.getchannel("A"))
    return base


__all__ = ["backend_name", "enable_xorg_click", "flatten", "load_pystray"]
