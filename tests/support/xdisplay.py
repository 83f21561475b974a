"""A real X display for the tray tests: Xvfb (on a display number it picks itself, -displayfd) with
Debian's `trayer` docking tray icons, and python-xlib to find, click and photograph what it shows."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class XDisplay:
    name: str  # ":N"
    processes: list = field(default_factory=list)

    @property
    def env(self) -> dict:
        return {"DISPLAY": self.name}

    def connect(self):
        import Xlib.display

        return Xlib.display.Display(self.name)

    def tray_owner(self) -> int:
        """The window owning the system tray selection (0 while no tray runs)."""
        d = self.connect()
        try:
            owner = d.get_selection_owner(d.intern_atom(f"_NET_SYSTEM_TRAY_S{d.get_default_screen()}"))
            return 0 if owner in (0, None) or getattr(owner, "id", owner) == 0 else owner.id
        finally:
            d.close()

    def find_window(self, wm_class: str) -> tuple[int, int, int, int] | None:
        """(x, y, width, height) on screen of the first mapped window whose WM_CLASS has `wm_class`."""
        import Xlib.X

        d = self.connect()
        try:
            root = d.screen().root
            todo = [root]
            while todo:
                w = todo.pop()
                try:
                    cls = w.get_wm_class()
                    attrs = w.get_attributes()
                    if cls and wm_class in cls and attrs.map_state == Xlib.X.IsViewable:
                        g = w.get_geometry()
                        pos = w.translate_coords(root, 0, 0)
                        return -pos.x, -pos.y, g.width, g.height
                    todo.extend(w.query_tree().children)
                except Exception:  # noqa: BLE001 - a window may vanish while we walk the tree
                    continue
            return None
        finally:
            d.close()

    def click(self, x: int, y: int, button: int = 1) -> None:
        """A real pointer click through the XTEST extension."""
        import Xlib.X
        from Xlib.ext import xtest

        d = self.connect()
        try:
            xtest.fake_input(d, Xlib.X.MotionNotify, x=x, y=y)
            d.sync()
            xtest.fake_input(d, Xlib.X.ButtonPress, button)
            d.sync()
            xtest.fake_input(d, Xlib.X.ButtonRelease, button)
            d.sync()
        finally:
            d.close()

    def screenshot(self, path: Path, box: tuple[int, int, int, int] | None = None) -> Path:
        """The root window (or a box of it) as a PNG."""
        from PIL import Image

        d = self.connect()
        try:
            root = d.screen().root
            g = root.get_geometry()
            x, y, w, h = box or (0, 0, g.width, g.height)
            raw = root.get_image(x, y, w, h, 2, 0xFFFFFFFF)  # ZPixmap
            image = Image.frombytes("RGB", (w, h), raw.data, "raw", "BGRX")
        finally:
            d.close()
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path)
        return path

    def stop(self) -> None:
        for p in reversed(self.processes):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)


def available() -> str | None:
    """Why the X tray tests cannot run here, or None."""
    for tool in ("Xvfb", "trayer"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (.ci/run installs it)"
    try:
        import Xlib  # noqa: F401
    except ImportError:
        return "python-xlib is not installed"
    return None


def start(size: str = "640x120x24", tray: bool = True, wait_s: float = 15.0) -> XDisplay:
    """Xvfb on a free display (it writes the number to a pipe: -displayfd), and trayer docked."""
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", size, "-nolisten", "tcp"],
                            pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    display = XDisplay("", [xvfb])
    try:
        with os.fdopen(read_fd) as pipe:
            number = pipe.readline().strip()
        if not number:
            raise RuntimeError("Xvfb did not report a display number")
        display.name = f":{number}"
        if tray:
            _start_tray(display, wait_s)
    except BaseException:
        display.stop()
        raise
    return display


def _start_tray(display: XDisplay, wait_s: float) -> None:
    """trayer, docked at the top left; now and then it never takes the tray selection (1 start in
    5 here, silently): give each start 3 s, and start it again."""
    env = {**os.environ, "DISPLAY": display.name}
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        trayer = subprocess.Popen(
            ["trayer", "--edge", "top", "--align", "left", "--widthtype", "pixel", "--width", "200",
             "--heighttype", "pixel", "--height", "32", "--transparent", "false", "--SetDockType", "true",
             "--expand", "true"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        display.processes.append(trayer)
        attempt = time.monotonic() + 3.0
        while time.monotonic() < attempt:
            if display.tray_owner():
                return
            time.sleep(0.05)
        trayer.kill()
        trayer.wait(5)
        display.processes.remove(trayer)
    raise RuntimeError("trayer did not take the system tray selection")
