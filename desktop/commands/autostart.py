"""`keepmind autostart on|off|status`: start the tray at login (the same switch as the tray's menu)."""

from __future__ import annotations

import sys

from ..paths import home_option


def register(sub) -> None:
    p = sub.add_parser("autostart", help="start Keepmind (the tray) at login: on, off or status")
    p.add_argument("switch", choices=("on", "off", "status"))
    home_option(p)
    p.epilog = ("The entry starts Keepmind on the data dir in effect (--home, else KEEPMIND_HOME, which the login "
                "session does not have, so it is written into the entry). There is one entry per user: turning "
                "it on for one data dir replaces another's.")
    p.set_defaults(func=cmd_autostart)


def login_entry(home_arg):
    """This platform's login entry for the tray on `home_arg`, else on KEEPMIND_HOME (the login
    session does not have it), else on the default data dir."""
    import os
    from pathlib import Path

    from ..tray.autostart import autostart_for, launch_command
    from ..tray.icons import icon_file

    chosen = home_arg or os.environ.get("KEEPMIND_HOME")
    args = launch_command(home=Path(chosen).expanduser().resolve() if chosen else None,
                          frozen=bool(getattr(sys, "frozen", False)))
    return autostart_for(args, icon=str(icon_file("healthy", 64)))


def cmd_autostart(args) -> int:
    from ..paths import resolve_home

    home = resolve_home(getattr(args, "home_sub", None) or getattr(args, "home", None))
    entry = login_entry(getattr(args, "home_sub", None) or getattr(args, "home", None))
    written = entry.written()
    other = written is not None and written != entry.content  # another data dir's (or another install's)
    if args.switch == "on":
        entry.enable()
        print(f"autostart: on (Keepmind starts at login on {home}: {entry.path})"
              + ("; it replaced the entry that started another data dir or installation" if other else ""))
    elif args.switch == "off":
        removed = entry.disable()
        print("autostart: off (" + (f"removed {entry.path}" + (", which started another data dir or installation"
                                                               if other else "") if removed else "there was no entry")
              + ")")
    elif other:
        print(f"autostart: off for {home}; the login entry starts another data dir or installation "
              f"({entry.path}): `keepmind autostart on` here replaces it")
    else:
        print(f"autostart: {'on' if written is not None else 'off'} for {home} ({entry.path})")
    return 0
