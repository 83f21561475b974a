"""`keepmind autostart on|off|status`: start the tray at login (the same switch as the tray's menu)."""

from __future__ import annotations

import sys

from ..paths import home_option


def register(sub) -> None:
    p = sub.add_parser("autostart", help="start Keepmind (the tray) at login: on, off or status")
    p.add_argument("switch", choices=("on", "off", "status"))
    home_option(p)
    p.epilog = "With --home, the entry starts Keepmind on that data dir."
    p.set_defaults(func=cmd_autostart)


def login_entry(home_arg):
    """This platform's login entry for the tray on `home_arg` (None: the default data dir)."""
    from pathlib import Path

    from ..tray.autostart import autostart_for, launch_command
    from ..tray.icons import icon_file

    args = launch_command(home=Path(home_arg).expanduser().resolve() if home_arg else None,
                          frozen=bool(getattr(sys, "frozen", False)))
    return autostart_for(args, icon=str(icon_file("healthy", 64)))


def cmd_autostart(args) -> int:
    entry = login_entry(getattr(args, "home_sub", None) or getattr(args, "home", None))
    if args.switch == "on":
        entry.enable()
        print(f"autostart: on (Keepmind starts at login: {entry.path})")
    elif args.switch == "off":
        removed = entry.disable()
        print(f"autostart: off ({'removed ' + str(entry.path) if removed else 'there was no entry'})")
    else:
        print(f"autostart: {'on' if entry.enabled() else 'off'} ({entry.path})")
    return 0
