"""pystray's backends and what we do about their gaps.

pystray picks its backend when it is imported: PYSTRAY_BACKEND if set, else on Linux AppIndicator
(needs PyGObject and the AppIndicator typelib), then GTK, then X11 (python-xlib); Cocoa on macOS,
win32 on Windows. The X11 fallback has no menu and no notifications, and in pystray 0.19.5 its
icon window never asks the X server for button events, so its left-click handler never runs:
`xorg_icon_class` adds ButtonPressMask, and a left click then runs the menu's default item
(Open Keepmind). It also draws without alpha, so its image is flattened onto a background first.
"""

from __future__ import annotations

import importlib

DARK = (48, 48, 48)  # the X11 fallback has no transparency: a neutral dark panel colour


def load_pystray():
    """The pystray module with a working backend; ImportError (with pystray's reasons) when this
    desktop has none (no display, no AppIndicator, no X)."""
    return importlib.import_module("pystray")


def backend_name(icon_class) -> str:
    """xorg, appindicator, gtk, darwin, win32, or dummy (pystray's base Icon: it cannot show anything)."""
    module = icon_class.__module__.rsplit(".", 1)[-1].lstrip("_")
    return "dummy" if module == "base" else module


def x11_tray_host(display_name: str | None = None) -> bool | None:
    """Does the X display have a system tray (a notification area owning `_NET_SYSTEM_TRAY_Sn`)?
    None when it cannot be asked. Without one, pystray's X11 icon is a 1x1 window nobody sees."""
    try:
        import Xlib.display

        d = Xlib.display.Display(display_name)
    except Exception:  # noqa: BLE001 - no python-xlib, or the display refuses us
        return None
    try:
        owner = d.get_selection_owner(d.intern_atom(f"_NET_SYSTEM_TRAY_S{d.get_default_screen()}"))
        return not (owner in (0, None) or getattr(owner, "id", owner) == 0)
    except Exception:  # noqa: BLE001
        return None
    finally:
        d.close()


def icon_class_for(icon_class):
    """The Icon class to use: pystray's own, or for X11 the subclass below."""
    return xorg_icon_class(icon_class) if backend_name(icon_class) == "xorg" else icon_class


def xorg_icon_class(base):
    """pystray's X11 icon, fixed where 0.19.5 falls short on a real tray (trayer, Xfce, i3bar...).

    Every X request runs on the icon's loop thread. pystray sends other threads' requests through
    the X server (a ClientMessage to itself) and lets those threads flush the shared connection;
    with python-xlib's threaded I/O a wake-up is then lost now and then, and the loop hangs in a
    reply wait or in next_event() (measured here: 1 start in 12 never painted, 1 stop in 3 never
    returned). Here other threads queue a call and wait for the loop, which polls X and the queue.
    """
    import queue
    import threading

    class KeepmindXorgIcon(base):
        POLL_S = 0.05  # how often the loop looks at X and at the queued calls
        CALL_TIMEOUT_S = 5.0

        def __init__(self, *args, **kwargs):
            self._quit = threading.Event()
            self._calls: queue.Queue = queue.Queue()
            self._thread = None
            super().__init__(*args, **kwargs)
            import Xlib.X

            # Its window never selected button events, so its left-click handler never ran.
            self._window.change_attributes(event_mask=Xlib.X.ExposureMask | Xlib.X.StructureNotifyMask
                                           | Xlib.X.ButtonPressMask)
            self._display.flush()
            # Replace pystray's X-message dispatchers with the queue (see the class docstring).
            for name in ("_show", "_hide", "_update_icon", "_update_title"):
                setattr(self, name, self._on_loop(getattr(type(self), name).__get__(self)))

        def _on_loop(self, method):
            def call():
                if self._thread is None or threading.current_thread() is self._thread:
                    return method()
                if self._quit.is_set():
                    return None  # the loop is gone: nothing left to draw on
                done, box = threading.Event(), {}
                self._calls.put((method, done, box))
                done.wait(self.CALL_TIMEOUT_S)
                if "error" in box:
                    raise box["error"]
                return None
            return call

        def _run_calls(self) -> None:
            while True:
                try:
                    method, done, box = self._calls.get_nowait()
                except queue.Empty:
                    return
                try:
                    method()
                except Exception as exc:  # noqa: BLE001 - handed to the calling thread
                    box["error"] = exc
                finally:
                    done.set()

        def _update_icon(self):
            # pystray asks the tray to dock the window again on every image change; trayer then
            # re-embeds it (at times 1 px wide). Docked already: just repaint.
            if self._systray_manager is None:
                return base._update_icon(self)
            self._icon_data = None
            self._draw()
            self._icon_valid = True

        def stop(self):
            """End the loop (it destroys the window on its way out); safe from any thread."""
            self._quit.set()

        def _mainloop(self):
            import Xlib.X

            try:
                while not self._quit.is_set():
                    self._run_calls()
                    if not self._display.pending_events():
                        self._quit.wait(self.POLL_S)
                        continue
                    event = self._display.next_event()
                    if event.type == Xlib.X.DestroyNotify and event.window == self._window:
                        break
                    self._message_handlers.get(event.type, lambda e: None)(event)
            except Exception:  # noqa: BLE001 - as pystray's own loop: log, and end
                self._log.error("An error occurred in the main loop", exc_info=True)
            finally:
                self._running = False
                while True:  # callers still waiting are let go
                    try:
                        self._calls.get_nowait()[1].set()
                    except queue.Empty:
                        break
                try:
                    self._window.destroy()  # leaves the tray
                    self._display.flush()
                except Exception:  # noqa: BLE001 - already gone
                    pass

        def _assert_icon_data(self, width, height):
            # pystray stretches the image to the window (trayer's slots are 24x30): keep it round.
            from PIL import Image

            if self._icon_data and self._icon_data.size == (width, height):
                return
            side = max(1, min(width, height))
            data = Image.new("RGB", (width, height), DARK)
            data.paste(self._icon.resize((side, side), Image.LANCZOS), ((width - side) // 2, (height - side) // 2))
            data.tostring = data.tobytes  # what python-xlib's put_pil_image calls
            self._icon_data = data

        def _update_title(self):
            # WM_NAME is Latin-1: anything else would raise in the event loop.
            self._title = self.title.encode("latin-1", "replace").decode("latin-1")
            return base._update_title(self)

        def __del__(self):
            try:
                self._display.close()
            except Exception:  # noqa: BLE001 - the connection may be gone with the server
                pass

    KeepmindXorgIcon.__module__ = base.__module__  # still the X11 backend, for backend_name
    return KeepmindXorgIcon


def flatten(image, background=DARK):
    """An RGB copy of an RGBA image composited on `background` (for a backend that ignores alpha)."""
    from PIL import Image

    base = Image.new("RGB", image.size, background)
    base.paste(image, mask=image.getchannel("A"))
    return base


__all__ = ["backend_name", "flatten", "icon_class_for", "load_pystray", "xorg_icon_class"]
