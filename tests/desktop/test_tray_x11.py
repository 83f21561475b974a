"""The real tray under Xvfb with `trayer` docking it (pystray's X11 backend, as on a desktop without
AppIndicator): it docks, serves, opens the UI on a left click, hands a second launch to the
running one, follows pause in its icon, and Quit (from the menu function) or SIGTERM stops
everything within 5 s. Screenshots go to .cache/screenshots/tray-*.png (not committed)."""

from __future__ import annotations

import importlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from support import xdisplay

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / ".cache" / "screenshots"
COLOURS = {"healthy": (46, 157, 91), "degraded": (224, 161, 0), "paused": (138, 143, 152)}

pytestmark = pytest.mark.slow


@pytest.fixture
def display():
    why = xdisplay.available()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    d = xdisplay.start()
    yield d
    d.stop()


def _home(tmp_path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"memory.embeddings.enabled": False, "server.port": 0,
                                                    "tray.status_seconds": 1}))
    return home


def _browser(tmp_path) -> tuple[str, Path]:
    """A BROWSER command (what Python's webbrowser runs) that records the URLs it is asked to open."""
    log = tmp_path / "opened.txt"
    script = tmp_path / "browser"
    script.write_text(f'#!/bin/sh\necho "$1" >> {log}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return f"{script} %s", log


def _wait(predicate, timeout=10.0, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def _colour_at(display, box=None) -> tuple[int, int, int]:
    """The colour of the icon's disc below its centre dot (between the white dots)."""
    from PIL import Image

    box = display.find_window("keepmind")  # the tray may move the icon when it asks to dock again
    if box is None:
        return (0, 0, 0)
    x, y, w, h = box
    path = display.screenshot(SHOTS / "tray-probe.png", (x, y, w, h))
    with Image.open(path) as image:
        return image.getpixel((w // 2, int(h * 0.78)))


def _near(rgb, state) -> bool:
    return all(abs(a - b) <= 12 for a, b in zip(rgb, COLOURS[state]))


def test_the_real_tray_docks_serves_opens_on_click_follows_pause_and_stops_on_sigterm(display, tmp_path):
    home = _home(tmp_path)
    browser, opened = _browser(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSTRAY_BACKEND", "WAYLAND_DISPLAY")}
    env.update(DISPLAY=display.name, BROWSER=browser)
    tray = subprocess.Popen([sys.executable, "-m", "keepmind", "--home", str(home)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = tray.stdout.readline()
        assert line.startswith("keepmind running in the tray (xorg) on http://127.0.0.1:"), (line, tray.stderr.read())
        url = line.split(" on ", 1)[1].split()[0]
        box = _wait(lambda: display.find_window("keepmind"))
        assert box is not None, "the icon never docked"
        _wait(lambda: _near(_colour_at(display, box), "healthy"), timeout=5)
        display.screenshot(SHOTS / "tray-docked.png")
        display.screenshot(SHOTS / "tray-icon-healthy.png", box)
        assert _near(_colour_at(display, box), "healthy")

        # it serves the API and the UI's pages (an HTML page at /)
        token = (home / "token").read_text().strip()
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=10) as http:
            assert http.get("/api/v1/status").json()["memory"]["status"] == "healthy"
            assert http.get("/").headers["content-type"].startswith("text/html")

        # a second launch opens the running one in the browser, says so, exits 0
        second = subprocess.run([sys.executable, "-m", "keepmind", "--home", str(home)], env=env, text=True,
                                capture_output=True, timeout=60)
        assert second.returncode == 0, second.stderr
        assert f"Keepmind is already running for {home} at {url}: opened it in your browser" in second.stdout
        (first,) = opened.read_text().splitlines()
        assert first.startswith(url + "/signin?code=")  # opened signed in

        # a left click on the docked icon opens the UI (pystray 0.19.5 alone never gets this click)
        display.click(box[0] + box[2] // 2, box[1] + box[3] // 2)
        assert _wait(lambda: len(opened.read_text().splitlines()) == 2, timeout=5), opened.read_text()

        # pause from outside (the CLI, through the API): the icon turns grey within a poll
        subprocess.run([sys.executable, "-m", "keepmind", "pause", "--home", str(home)], env=env, check=True,
                       capture_output=True, timeout=60)
        assert _wait(lambda: _near(_colour_at(display, box), "paused"), timeout=5)
        display.screenshot(SHOTS / "tray-icon-paused.png", box)
        subprocess.run([sys.executable, "-m", "keepmind", "resume", "--home", str(home)], env=env, check=True,
                       capture_output=True, timeout=60)
        assert _wait(lambda: _near(_colour_at(display, box), "healthy"), timeout=5)

        started = time.monotonic()
        tray.send_signal(signal.SIGTERM)
        out, err = tray.communicate(timeout=30)
        took = time.monotonic() - started
    finally:
        if tray.poll() is None:
            tray.kill()
            tray.communicate(timeout=30)
    assert tray.returncode == 0, err
    assert took < 5.0, took
    assert "keepmind stopped" in out
    assert not (home / "server.json").exists() and not (home / "keepmind.lock").exists()
    assert display.find_window("keepmind") is None  # the icon is gone from the tray


def test_quit_from_the_menu_function_stops_the_real_tray_within_5_s(display, tmp_path, monkeypatch, start_live):
    monkeypatch.setenv("DISPLAY", display.name)
    monkeypatch.delenv("PYSTRAY_BACKEND", raising=False)
    xorg = importlib.import_module("pystray._xorg")  # connects to DISPLAY: the Xvfb above
    pystray = importlib.import_module("pystray")
    from keepmind.desktop.tray.app import TrayApp
    from keepmind.desktop.tray.menu import menu_items

    live = start_live(tmp_path / "home")
    home = live.daemon.home
    app = TrayApp(live.daemon, pystray=SimpleNamespace(Icon=xorg.Icon, Menu=pystray.Menu, MenuItem=pystray.MenuItem),
                  notifier=lambda *a: "recorded", browser_open=lambda url: True)
    assert app.backend == "xorg" and app.clicks and app.state.has_menu is False
    timing = {}

    def press_quit():
        if _wait(lambda: display.find_window("keepmind"), timeout=10) is None:
            app.quit()
            return
        [quit_item] = [i for i in menu_items(app.state) if i.action == "quit"]
        [pystray_item] = [i for i in app.icon.menu.items if getattr(i, "text", "") == quit_item.label]
        timing["pressed"] = time.monotonic()
        pystray_item(app.icon)
    threading.Thread(target=press_quit, daemon=True).start()
    app.run()  # the main thread, as in the real program; returns once Quit has stopped everything
    took = time.monotonic() - timing["pressed"]
    assert took < 5.0, took
    assert live.engine.closed and not live.daemon.server.running
    assert not (home / "server.json").exists() and not (home / "keepmind.lock").exists()
    assert display.find_window("keepmind") is None


def test_a_display_without_a_system_tray_is_said_not_claimed(tmp_path):
    why = xdisplay.available()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    bare = xdisplay.start(tray=False)  # Xvfb alone: no panel owns the tray selection
    home = _home(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSTRAY_BACKEND", "WAYLAND_DISPLAY")}
    env.update(DISPLAY=bare.name)
    tray = subprocess.Popen([sys.executable, "-m", "keepmind", "--home", str(home)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = tray.stdout.readline()
        assert "in the tray" not in line, line
        assert line.startswith("keepmind running on http://127.0.0.1:") and "has no system tray" in line, (
            line, tray.stderr.read())
        assert "`keepmind open`" in line
    finally:
        tray.send_signal(signal.SIGTERM)
        tray.communicate(timeout=30)
        bare.stop()
    assert tray.returncode == 0
