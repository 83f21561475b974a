"""`keepmind open`: open the browser pages of the running Keepmind, signed in.

The sign-in code is made inside the server (an authenticated `POST /api/v1/ui/links` with the
local token, or the token named by `--as`), valid 60 seconds and good once; this command only
carries the link to the browser (or prints it with `--print`). When no Keepmind is running it
starts `keepmind serve` in the background, as the MCP adapter does.
"""

from __future__ import annotations

import sys
import webbrowser

from ..paths import home_of, home_option


def register(sub) -> None:
    p = sub.add_parser("open", help="open Keepmind's pages in the browser, signed in (a one-time link)")
    home_option(p)
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="print the link instead of opening a browser (scripts, headless machines)")
    p.add_argument("--as", dest="as_token", metavar="TOKEN_NAME", default=None,
                   help="act with this API token's ceiling and boundaries instead of the local token's")
    p.add_argument("--no-start", action="store_true", help="fail instead of starting `keepmind serve`")
    p.set_defaults(func=cmd_open)


def cmd_open(args) -> int:
    from ..process.client import DaemonClient, connect

    home = home_of(args)
    running = DaemonClient.from_home(home)
    if running is not None:
        running.close()
    elif not args.no_start:
        print("Keepmind is not running: starting `keepmind serve` in the background…", file=sys.stderr)
    client = connect(home, start=not args.no_start)
    try:
        link = client.post("/ui/links", {"as": args.as_token} if args.as_token else {})
    finally:
        client.close()
    url, who = link["url"], link["token"]
    if args.print_only:
        print(url)
        print(f"(signs in once, within {link['expires_in']} s, as {who['name']}: ceiling {who['audience_ceiling']})",
              file=sys.stderr)
        return 0
    if not webbrowser.open(url):
        print(f"no browser could be opened here; open this link within {link['expires_in']} s:", file=sys.stderr)
        print(url)
        return 0
    print(f"opened Keepmind in your browser, signed in as {who['name']} (ceiling {who['audience_ceiling']})")
    return 0
