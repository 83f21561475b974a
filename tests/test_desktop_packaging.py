"""packaging/: the Linux launcher and icon install (run for real into a temp XDG_DATA_HOME), the macOS
LaunchAgent and app bundle setting, and the Windows shortcut recipe (by content)."""

from __future__ import annotations

import configparser
import os
import plistlib
import shlex
import subprocess
from pathlib import Path

from keepmind.desktop.tray.autostart import macos_entry

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"


def _entry(path: Path) -> dict:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read_string(path.read_text())
    return dict(parser["Desktop Entry"])


def test_the_linux_install_puts_the_launcher_and_every_icon_size_in_xdg_data_home(tmp_path):
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)}
    script = PACKAGING / "linux" / "install.sh"
    run = subprocess.run(["bash", str(script), "/opt/Keep Mind/keepmind"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    entry = _entry(tmp_path / "data" / "applications" / "keepmind.desktop")
    assert entry["Type"] == "Application" and entry["Name"] == "Keepmind" and entry["Icon"] == "keepmind"
    assert shlex.split(entry["Exec"]) == ["/opt/Keep Mind/keepmind"] and entry["Terminal"] == "false"
    theme = tmp_path / "data" / "icons" / "hicolor"
    for size in (16, 22, 32, 64):
        icon = theme / f"{size}x{size}" / "apps" / "keepmind.png"
        assert icon.read_bytes() == (ROOT / "icons" / f"keepmind-healthy-{size}.png").read_bytes()
    assert (theme / "scalable" / "apps" / "keepmind.svg").is_file()
    run = subprocess.run(["bash", str(script), "--uninstall"], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and not (tmp_path / "data" / "applications" / "keepmind.desktop").exists()
    assert not (theme / "16x16" / "apps" / "keepmind.png").exists()


def test_the_macos_launch_agent_is_what_autostart_writes_for_the_app_bundle(tmp_path):
    shipped = plistlib.loads((PACKAGING / "macos" / "app.keepmind.tray.plist").read_bytes())
    written = macos_entry(tmp_path, ["/Applications/Keepmind.app/Contents/MacOS/keepmind-tray"])
    assert shipped == plistlib.loads(written.content.encode())


def test_the_app_bundle_is_a_menu_bar_app_and_the_build_ships_no_models():
    spec = (PACKAGING / "pyinstaller" / "keepmind.spec").read_text()
    assert '"LSUIElement": True' in spec and '"CFBundleExecutable": "keepmind-tray"' in spec
    assert '"**/*.onnx"' in spec and "pystray._xorg" in spec and "pystray._darwin" in spec and "pystray._win32" in spec


def test_the_windows_recipe_makes_start_menu_and_startup_shortcuts_to_the_windowless_exe():
    recipe = (PACKAGING / "windows" / "shortcuts.ps1").read_text()
    assert 'Join-Path $App "keepmind-tray.exe"' in recipe
    assert 'GetFolderPath("Startup")' in recipe and 'GetFolderPath("Programs")' in recipe
    assert "CreateShortcut" in recipe and "Remove-Item $link" in recipe
