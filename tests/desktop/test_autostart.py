"""Start at login: the XDG entry for real (XDG_CONFIG_HOME in tmp), the macOS and Windows entries by content."""

from __future__ import annotations

import plistlib
import shlex
import sys
from pathlib import Path

from keepmind.desktop.cli import main
from keepmind.desktop.tray.autostart import autostart_for, desktop_exec, launch_command


def test_autostart_on_writes_an_xdg_entry_that_starts_the_tray_and_off_removes_it(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setattr(sys, "platform", "linux")
    home = tmp_path / "my data"
    entry = config / "autostart" / "keepmind.desktop"

    assert main(["autostart", "status"]) == 0
    assert "autostart: off" in capsys.readouterr().out
    assert main(["autostart", "on", "--home", str(home)]) == 0
    assert f"autostart: on (Keepmind starts at login on {home}: {entry})" in capsys.readouterr().out
    lines = entry.read_text().splitlines()
    assert lines[0] == "[Desktop Entry]" and "Type=Application" in lines and "Terminal=false" in lines
    exec_line = next(x for x in lines if x.startswith("Exec="))
    # the desktop spec's quoting is shell-compatible for these characters: the command round-trips
    assert shlex.split(exec_line[5:]) == [sys.executable, "-P", "-m", "keepmind", "--home", str(home.resolve())]
    icon = Path(next(x for x in lines if x.startswith("Icon="))[5:])
    assert icon.name == "keepmind-healthy-64.png" and icon.is_file()
    assert main(["autostart", "status", "--home", str(home)]) == 0
    assert f"autostart: on for {home}" in capsys.readouterr().out
    assert main(["autostart", "off", "--home", str(home)]) == 0
    assert "removed" in capsys.readouterr().out and not entry.exists()
    assert main(["autostart", "off"]) == 0
    assert "there was no entry" in capsys.readouterr().out


def test_one_login_entry_per_user_is_said_for_the_data_dir_it_starts(tmp_path, monkeypatch, capsys):
    """A walk found `autostart status --home B` saying "on" for A's entry, `on --home B` replacing A's
    silently, and KEEPMIND_HOME alone written nowhere (the login session does not have it)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(sys, "platform", "linux")
    entry = tmp_path / "config" / "autostart" / "keepmind.desktop"
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["autostart", "on", "--home", str(a)]) == 0
    capsys.readouterr()
    assert main(["autostart", "status", "--home", str(b)]) == 0
    assert capsys.readouterr().out.startswith(f"autostart: off for {b}; the login entry starts another data dir")
    assert main(["autostart", "on", "--home", str(b)]) == 0
    assert "it replaced the entry that started another data dir" in capsys.readouterr().out
    assert f"--home {b.resolve()}" in entry.read_text()
    monkeypatch.setenv("KEEPMIND_HOME", str(a))
    assert main(["autostart", "on"]) == 0
    capsys.readouterr()
    assert f"--home {a.resolve()}" in entry.read_text()  # written in: the login session has no KEEPMIND_HOME


def test_desktop_exec_quotes_what_the_spec_reserves():
    assert desktop_exec(["/opt/keepmind/keepmind"]) == "/opt/keepmind/keepmind"
    assert desktop_exec(["/a b/python", "-m", "keepmind"]) == '"/a b/python" -m keepmind'
    assert desktop_exec(['/x/$HOME"`\\']) == '"/x/\\$HOME\\"\\`\\\\"'
    assert desktop_exec(["100%"]) == "100%%"


def test_the_macos_launch_agent_runs_the_app_at_login_in_the_gui_session(tmp_path):
    entry = autostart_for(["/Applications/Keepmind.app/Contents/MacOS/keepmind"], platform="darwin",
                          environ={"HOME": str(tmp_path)})
    assert entry.path == tmp_path / "Library" / "LaunchAgents" / "app.keepmind.tray.plist"
    plist = plistlib.loads(entry.content.encode())
    assert plist == {"Label": "app.keepmind.tray",
                     "ProgramArguments": ["/Applications/Keepmind.app/Contents/MacOS/keepmind"],
                     "RunAtLoad": True, "KeepAlive": False, "ProcessType": "Interactive",
                     "LimitLoadToSessionType": "Aqua"}
    entry.enable()
    assert entry.enabled() and plistlib.loads(entry.path.read_bytes())["Label"] == "app.keepmind.tray"


def test_the_windows_startup_entry_is_a_cmd_in_the_startup_folder(tmp_path):
    args = launch_command(frozen=True, executable=r"C:\Program Files\Keepmind\keepmind.exe")
    entry = autostart_for(args, platform="win32", environ={"APPDATA": str(tmp_path)})
    assert entry.path == tmp_path / "Microsoft" / "Windows" / "Start Menu" / "Programs" / "Startup" / "Keepmind.cmd"
    assert entry.content.splitlines() == [
        "@echo off",
        "rem Keepmind: starts the tray at login (written by `keepmind autostart on`; delete to stop)",
        'start "" "C:\\Program Files\\Keepmind\\keepmind.exe"',
    ]
    entry.enable()
    assert entry.path.read_bytes().count(b"\r\n") == 3  # a batch file has DOS line ends


def test_the_launch_command_is_the_app_when_built_and_python_m_keepmind_otherwise(tmp_path):
    assert launch_command(frozen=True, executable="/opt/keepmind/keepmind") == ["/opt/keepmind/keepmind"]
    assert launch_command(executable="/usr/bin/python3", platform="linux", home=tmp_path) == [
        "/usr/bin/python3", "-P", "-m", "keepmind", "--home", str(tmp_path)]
