"""`keepmind serve`, `keepmind status`, `keepmind token ...` and `keepmind mcp`."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import threading
from pathlib import Path

from keepmind.engine import EngineError, open_engine

from ..paths import home_of, home_option, load_home_settings


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the engine and the localhost API on 127.0.0.1 (no tray)")
    home_option(p)
    p.add_argument("--port", type=int, default=None,
                   help="port on 127.0.0.1 (default: server.port from keepmind.json, 8765; 0 picks a free one)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("status", help="is Keepmind running, and is memory healthy, degraded or paused")
    home_option(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("token", help="API tokens: show the local one, create, list, revoke")
    tsub = p.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    t = tsub.add_parser("show", help="print the local token (created on first start)")
    home_option(t)
    t.set_defaults(func=cmd_token_show)
    t = tsub.add_parser("create", help="create a token; its secret is printed once")
    home_option(t)
    t.add_argument("name")
    t.add_argument("--ceiling", default="team", choices=("personal", "team", "public"),
                   help="the widest audience its sessions may have (default team)")
    t.add_argument("--boundary", action="append", dest="boundaries", metavar="NAME",
                   help="a boundary it may use (repeat; default any)")
    t.set_defaults(func=cmd_token_create)
    t = tsub.add_parser("list", help="the tokens (never their secrets)")
    home_option(t)
    t.add_argument("--all", action="store_true", help="include revoked tokens")
    t.set_defaults(func=cmd_token_list)
    t = tsub.add_parser("revoke", help="revoke a token by id or name")
    home_option(t)
    t.add_argument("token")
    t.set_defaults(func=cmd_token_revoke)

    p = sub.add_parser("mcp", help="MCP server on stdio, talking to the running Keepmind (started if needed)")
    home_option(p)
    p.add_argument("--audience", choices=("personal", "team", "public"), default=None,
                   help="audience of the MCP session (default: mcp.audience in keepmind.json)")
    p.add_argument("--boundary", default=None,
                   help="boundary of the MCP session (default: mcp.boundary in keepmind.json)")
    p.add_argument("--no-start", action="store_true", help="fail instead of starting `keepmind serve`")
    p.add_argument("--print-config", action="store_true",
                   help="print the mcpServers entry for an MCP client (absolute paths: works from any shell)")
    p.epilog = "KEEPMIND_TOKEN, if set, is the API token to use (default: the local token file)."
    p.set_defaults(func=cmd_mcp)


def cmd_serve(args) -> int:

    from ..process.daemon import Daemon
    from .writepath import llm_api_key

    home = home_of(args, create=True)
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    settings = load_home_settings(home)
    daemon = Daemon(home, port=args.port, settings=settings, llm_api_key=llm_api_key(settings),
                    on_shutdown_request=stop.set)
    try:
        daemon.start()
        print(f"keepmind serving on {daemon.url} (data dir {home}); Ctrl-C stops", flush=True)
        while not stop.wait(0.5):
            if not daemon.server.running:
                print("error: the HTTP server stopped unexpectedly", file=sys.stderr)
                return 1
    finally:
        daemon.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    print("keepmind stopped", flush=True)
    return 0


def cmd_status(args) -> int:
    from ..process.client import DaemonClient
    from ..process.files import read_server_json

    home = home_of(args)
    client = DaemonClient.from_home(home)
    if client is not None:
        try:
            info = client.get("/status")
        except EngineError as exc:
            info = None
            reason = exc.message
        finally:
            client.close()
    else:
        named = read_server_json(home)
        info, reason = None, "it has not been started, or it stopped" if named is None else (
            f"server.json names {named['url']}, but what answers there is not this data dir's Keepmind "
            "(left behind by a crash?); the token was not sent")
    if info is not None:
        out = {"server": {"running": True, "url": client.url}, "memory": info["memory"], "version": info["version"]}
    else:
        # Nothing runs: no health to report (models, workers and recall live in the running process),
        # only what the store holds and whether it will start paused.
        with open_engine(home, start_workers=False) as engine:
            stats = engine.stats()
            paused = engine.paused
        out = {"server": {"running": False, "reason": reason}, "home": str(home),
               "store": {k: stats[k] for k in ("documents", "records", "anchors", "edges", "pending_checkpoints")},
               "paused": paused}
    if args.json:
        print(json.dumps(out, indent=2))
    elif info is not None:
        print(f"server: running at {client.url}")
        print(f"memory: {out['memory']['status']}")
        for r in out["memory"]["reasons"]:
            print(f"  - {r}")
    else:
        store = out["store"]
        print(f"no Keepmind is running for {home} ({reason}): `keepmind serve` starts it")
        print(f"the store holds {store['documents']} documents, {store['records']} records, {store['anchors']} "
              f"anchors and {store['edges']} edges; {store['pending_checkpoints']} checkpoints wait"
              + ("; memory is paused (`keepmind resume`)" if paused else ""))
    return 0 if info is not None else 3


def cmd_token_show(args) -> int:
    from ..process.daemon import ensure_local_token

    home = home_of(args)
    with open_engine(home, start_workers=False) as engine:
        print(ensure_local_token(engine, home))
    return 0


def cmd_token_create(args) -> int:
    with open_engine(home_of(args), start_workers=False) as engine:
        created = engine.create_token(args.name, args.ceiling, args.boundaries or ["*"])
    t = created.token
    print(f"created token {t.name} ({t.id}): ceiling {t.audience_ceiling}, boundaries {', '.join(t.boundaries)}",
          file=sys.stderr)
    print("the secret is shown only now:", file=sys.stderr)
    print(created.secret)
    return 0


def cmd_token_list(args) -> int:
    with open_engine(home_of(args), start_workers=False) as engine:
        found = engine.list_tokens(include_revoked=args.all)
    if not found:
        print("no tokens yet: `keepmind token show` creates the local one")
    for t in found:
        state = "revoked" if t.revoked_at is not None else "live"
        print(f"{t.id}  {t.name:<20} ceiling={t.audience_ceiling:<8} boundaries={','.join(t.boundaries)}  {state}")
    return 0


def cmd_token_revoke(args) -> int:
    with open_engine(home_of(args), start_workers=False) as engine:
        t = engine.revoke_token(args.token)
    print(f"revoked {t.name} ({t.id})")
    return 0


def mcp_config(args) -> dict:
    """The `mcpServers` entry that starts this installation's `keepmind mcp`, by absolute path, so an
    MCP client finds it whatever its PATH (a venv need not be activated)."""
    script = Path(sys.argv[0]).resolve() if sys.argv and Path(sys.argv[0]).name == "keepmind" else None
    if script is None or not script.is_file():
        found = shutil.which("keepmind", path=str(Path(sys.executable).parent))
        script = Path(found).resolve() if found else None
    command, argv = (str(script), ["mcp"]) if script else (sys.executable, ["-m", "keepmind", "mcp"])
    for flag, value in (("--home", getattr(args, "home_sub", None) or getattr(args, "home", None)),
                        ("--audience", args.audience), ("--boundary", args.boundary)):
        if value:
            argv += [flag, str(Path(value).expanduser().resolve()) if flag == "--home" else value]
    return {"mcpServers": {"keepmind": {"command": command, "args": argv}}}


def cmd_mcp(args) -> int:
    import os

    from ..mcp.server import run_stdio

    if args.print_config:
        print(json.dumps(mcp_config(args), indent=2))
        return 0
    home = home_of(args, create=True)
    settings = load_home_settings(home)  # the MCP session's scope: flags, else the mcp.* settings
    return run_stdio(home, audience=args.audience or settings["mcp.audience"],
                     boundary=args.boundary or settings["mcp.boundary"], start=not args.no_start,
                     token=os.environ.get("KEEPMIND_TOKEN") or None)
