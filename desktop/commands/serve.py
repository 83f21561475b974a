"""`keepmind serve`, `keepmind status`, `keepmind token ...` and `keepmind mcp` (`keepmind stop`: lifecycle.py)."""

from __future__ import annotations

import json
import logging
import shutil
import signal
import sys
import threading
from pathlib import Path

from keepmind.engine import EngineError, open_engine
from keepmind.engine.clock import iso
from keepmind.engine.errors import InvalidInput
from keepmind.engine.wording import counted

from ..paths import home_of, home_option, load_home_settings, resolve_home
from .numbers import non_negative, port
from .terminal import one_line


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the engine and the localhost API on 127.0.0.1 (no tray)")
    home_option(p)
    p.add_argument("--port", type=port, default=None,
                   help="port on 127.0.0.1 (default: server.port from keepmind.json, 8765; 0 picks a free one)")
    p.add_argument("--stop-after-idle", type=non_negative, default=None, metavar="MINUTES",
                   help="stop once no request came for MINUTES and nothing is left to curate or distil "
                        "(how `keepmind mcp` starts it in the background; 0: never)")
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
    t = tsub.add_parser("revoke", help="revoke a token by id or name (the local one: replaced by a new one)")
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
    p.epilog = ("The data dir must exist (`keepmind serve` creates it the first time). KEEPMIND_TOKEN, if set, "
                "is the API token to use (default: the local token file).")
    p.set_defaults(func=cmd_mcp)


def cmd_serve(args) -> int:
    return run_headless(home_of(args, create=True), args.port, idle_stop_minutes=args.stop_after_idle)


def run_headless(home, port: int | None = None, *, idle_stop_minutes: float | None = None) -> int:
    """`keepmind serve`: the Daemon without a tray, until SIGTERM, SIGINT or `keepmind stop` (also
    the tray's fallback where there is no display); with `idle_stop_minutes`, until idle that long."""
    from ..process.daemon import Daemon
    from ..process.logs import remove_file_log, setup_file_log
    from .writepath import llm_api_key

    file_log = setup_file_log(home)
    try:
        settings = load_home_settings(home)
        idle = idle_stop_minutes if idle_stop_minutes and idle_stop_minutes > 0 else None
        daemon = Daemon(home, port=port, settings=settings, llm_api_key=llm_api_key(settings),
                        idle_stop_minutes=idle)
        return serve_until_signal(daemon, start=True)
    except Exception as exc:
        log_failure(exc, home, file_log)
        raise
    finally:
        remove_file_log(file_log)


def log_failure(exc: BaseException, home, file_log: logging.Handler) -> None:
    """Write the line the CLI is about to say for `exc` into keepmind.log (`file_log`, still
    attached here): a tray started at login, or a server started in the background, has no terminal
    to say it on. Only to that file: stderr gets the CLI's own `error:` line, once."""
    from .failures import STORE_ERRORS, store_failure

    if isinstance(exc, EngineError):
        line, exc_info = exc.message, None
    elif isinstance(exc, STORE_ERRORS):
        line, exc_info = store_failure(exc, home), None
    else:  # a bug: its traceback
        line, exc_info = f"{type(exc).__name__}: {exc}", (type(exc), exc, exc.__traceback__)
    record = logging.getLogger("keepmind.cli").makeRecord(
        "keepmind.cli", logging.ERROR, __file__, 0, "keepmind_failed error: %s", (line,), exc_info)
    file_log.handle(record)


def serve_until_signal(daemon, *, start: bool) -> int:
    """Run `daemon` (starting it if asked) until SIGTERM or SIGINT, then stop it in order."""
    from ..process.logs import log_path

    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    daemon.on_shutdown_request = stop.set  # POST /shutdown (`keepmind stop`) ends this loop too
    idle = daemon.idle_stop_minutes
    try:
        if start:
            daemon.start()
        print(f"keepmind serving on {daemon.url} (data dir {daemon.home}, logs in {log_path(daemon.home)}); "
              "Ctrl-C or `keepmind stop` stops it"
              + (f"; it stops by itself after {idle_minutes(idle)}" if idle else ""), flush=True)
        while not stop.wait(0.5):
            if not daemon.server.running:
                print("error: the HTTP server stopped unexpectedly", file=sys.stderr)
                return 1
            if daemon.idle_expired():
                print(f"no request for {idle:g} minute{'' if idle == 1 else 's'} and nothing left to do: stopping",
                      flush=True)
                break
    finally:
        daemon.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    print("keepmind stopped", flush=True)
    return 0


def cmd_status(args) -> int:
    """Exit 0: running and answering; 3: not running; 1: a Keepmind holds the data dir but cannot
    be reached (server.json missing, unreadable or not its own; hung or suspended)."""
    from ..process.client import DaemonClient
    from ..process.files import read_server_json
    from ..process.instance import Unreached, unreached

    home = home_of(args)
    named = read_server_json(home)
    client = DaemonClient.from_home(home)
    info, found = None, None
    if client is not None:
        try:
            info = client.get("/status")
        except EngineError as exc:  # it proved itself, then failed: running, not "not running"
            found = Unreached((named or {}).get("pid") or 0, f"its status at {client.url} failed ({exc.message})")
        finally:
            client.close()
    else:
        found = unreached(home)
    if info is not None:
        out = {"server": {"running": True, "url": client.url, "pid": (named or {}).get("pid"),
                          "idle_stop_minutes": (named or {}).get("idle_stop_minutes")},
               "memory": info["memory"], "version": info["version"]}
    elif found.running:
        out = {"server": {"running": True, "answering": False, "pid": found.pid or None, "reason": found.reason},
               "home": str(home)}
    else:
        # Nothing runs: no health to report (models, workers and recall live in the running process),
        # only what the store holds and whether it will start paused.
        with open_engine(home, start_workers=False) as engine:
            stats = engine.stats()
            paused = engine.paused
        out = {"server": {"running": False, "reason": found.reason}, "home": str(home),
               "store": {k: stats[k] for k in ("documents", "records", "anchors", "edges", "pending_checkpoints")},
               "paused": paused}
    if args.json:
        print(json.dumps(out, indent=2))
    elif info is not None:
        idle = out["server"]["idle_stop_minutes"]
        print(f"server: running at {client.url} (pid {out['server']['pid']})"
              + (f"; started by `keepmind mcp`, it stops after {idle_minutes(idle)}" if idle else ""))
        print(f"memory: {out['memory']['status']}")
        for r in out["memory"]["reasons"]:
            print(f"  - {r}")
    elif found.running:
        resume = (f"`kill -CONT {found.pid}` resumes it; " if found.suspended
                  else "try again in a moment; if it stays so, " if found.starting else "")
        print(f"server: running ({found.who}) but {found.reason}: {resume}`keepmind stop{_home_flag(args)}` ends "
              "it, then `keepmind` (or `keepmind serve`) starts it again")
    else:
        store = out["store"]
        print(f"no Keepmind is running for {home} ({found.reason}): `keepmind serve` starts it")
        print(f"the store holds {counted(store['documents'], 'document')}, {counted(store['records'], 'record')}, "
              f"{counted(store['anchors'], 'anchor')} and {counted(store['edges'], 'edge')}; "
              f"{counted(store['pending_checkpoints'], 'checkpoint')} "
              f"{'waits' if store['pending_checkpoints'] == 1 else 'wait'}"
              + ("; memory is paused (`keepmind resume`)" if paused else ""))
    return 0 if info is not None else 1 if found.running else 3


def idle_minutes(minutes: float) -> str:
    """"1 idle minute", "30 idle minutes", "0.5 idle minutes"."""
    return f"{minutes:g} idle minute" + ("" if minutes == 1 else "s")


def _home_flag(args) -> str:
    import shlex

    home = getattr(args, "home_sub", None) or getattr(args, "home", None)
    return f" --home {shlex.quote(str(home))}" if home else ""


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
        print(f"{t.id}  {one_line(t.name):<20} ceiling={t.audience_ceiling:<8} "
              f"boundaries={one_line(','.join(t.boundaries))}  {state}")
    return 0


def cmd_token_revoke(args) -> int:
    """Revoke a token. The local one (whose secret is in <home>/token) is replaced at once, so
    Keepmind's own commands, the tray, MCP and the hooks keep working with the new secret; while a
    Keepmind runs that is refused, because the running tray and MCP adapters hold the old one."""
    from ..process.client import DaemonClient
    from ..process.daemon import ensure_local_token
    from ..process.files import read_token_file
    from ..process.instance import unreached

    home = home_of(args)
    with open_engine(home, start_workers=False) as engine:
        target = engine.get_token(args.token)
        if target.revoked_at is not None:
            print(f"{one_line(target.name)} ({target.id}) was revoked already, on {iso(target.revoked_at)}: "
                  "`keepmind token list --all` shows every token")
            return 0
        secret = read_token_file(home)
        local = engine.verify_token(secret) if secret else None
        if local is None or local.id != target.id:
            t = engine.revoke_token(target.id)
            ended = engine.sessions_ended_with(t)
            print(f"revoked {one_line(t.name)} ({t.id})" + (
                f"; {counted(ended, 'session')} it had open {'has' if ended == 1 else 'have'} ended (what was "
                "said there is distilled)" if ended else ""))
            return 0
        running = DaemonClient.from_home(home)
        if running is None and (found := unreached(home)).running:
            raise InvalidInput(f"{one_line(target.name)} is the local token (in {home / 'token'}), and "
                               f"{found.summary}: stop it first (`keepmind stop`), then revoke "
                               f"{one_line(args.token)} to replace it with a new one")
        if running is not None:
            running.close()
            raise InvalidInput(f"{one_line(target.name)} is the local token (in {home / 'token'}), which the Keepmind "
                               f"running at {running.url} and its tray, MCP and hooks use: stop it first (`keepmind "
                               f"stop`), then revoke {one_line(args.token)} to replace it with a new one")
        t = engine.revoke_token(target.id)
        fresh = engine.verify_token(ensure_local_token(engine, home))
    print(f"revoked {one_line(t.name)} ({t.id}); the local token is now {fresh.name} ({fresh.id}), in "
          f"{home / 'token'}: Keepmind's own commands, the tray, MCP and the hooks use it")
    return 0


def mcp_config(args) -> dict:
    """The `mcpServers` entry that starts this installation's `keepmind mcp`, by absolute path, so an
    MCP client finds it whatever its PATH (a venv need not be activated)."""
    script = Path(sys.argv[0]).resolve() if sys.argv and Path(sys.argv[0]).name == "keepmind" else None
    if script is None or not script.is_file():
        found = shutil.which("keepmind", path=str(Path(sys.executable).parent))
        script = Path(found).resolve() if found else None
    command, argv = (str(script), ["mcp"]) if script else (sys.executable, ["-P", "-m", "keepmind", "mcp"])
    # The data dir in effect (--home, KEEPMIND_HOME or the default), always by absolute path: the
    # client starts the command with an environment and a working folder of its own.
    home = resolve_home(getattr(args, "home_sub", None) or getattr(args, "home", None))
    argv += ["--home", str(home.resolve())]
    for flag, value in (("--audience", args.audience), ("--boundary", args.boundary)):
        if value:
            argv += [flag, value]
    return {"mcpServers": {"keepmind": {"command": command, "args": argv}}}


def cmd_mcp(args) -> int:
    import os

    from keepmind.engine.policy import check_name

    from ..mcp.server import run_stdio

    # The engine's own check (the mcp.boundary setting passes it when loaded), now: else a config is
    # printed, or a client started, with a boundary every tool call then refuses. One line, exit 2.
    if args.boundary is not None:
        args.boundary = check_name(args.boundary)
    # The data dir must exist already, for the config and for the server alike: the server's stderr
    # goes to the MCP client's log, where no one reads "created a new, empty data dir", so a mistyped
    # --home in a client's configuration would become a new, empty store the agent then fills.
    # Refused as the commands that only read refuse it (`keepmind serve` creates one); one line, exit 2.
    home = home_of(args)
    if args.print_config:
        print(json.dumps(mcp_config(args), indent=2))
        return 0
    settings = load_home_settings(home)  # the MCP session's scope: flags, else the mcp.* settings
    return run_stdio(home, audience=args.audience or settings["mcp.audience"],
                     boundary=args.boundary or settings["mcp.boundary"], start=not args.no_start,
                     token=os.environ.get("KEEPMIND_TOKEN") or None,
                     idle_stop_minutes=settings["mcp.server_idle_minutes"] or None)
