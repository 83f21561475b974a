"""`keepmind pause` and `keepmind resume`: the same switch as the UI's header and the tray's menu.

They reach the running Keepmind of the data dir when one answers (so it takes effect at once),
else they set the state in the store: a Keepmind that runs but cannot be reached reads it from
there, one that is not running starts that way.
"""

from __future__ import annotations

from keepmind.engine import EngineError, open_engine

from ..paths import home_of, home_option


def register(sub) -> None:
    for name, helptext in (("pause", "pause memory: no turns recorded, nothing new kept, nothing recalled"),
                           ("resume", "resume memory after a pause")):
        p = sub.add_parser(name, help=helptext)
        home_option(p)
        p.set_defaults(func=cmd_switch, switch=name)


def cmd_switch(args) -> int:
    from ..process.client import DaemonClient
    from ..process.instance import unreached

    home = home_of(args)
    client = DaemonClient.from_home(home)
    why = None  # why a running Keepmind did not take it
    if client is not None:
        try:
            memory = client.post(f"/{args.switch}")["memory"]
        except EngineError as exc:
            if getattr(exc, "status", 503) < 500:
                raise
            memory, why = None, f"the Keepmind at {client.url} did not take it ({exc.message})"
        finally:
            client.close()
        if memory is not None:
            print(f"memory: {memory['status']} (the running Keepmind at {client.url})")
            return 0
    else:
        found = unreached(home)
        why = f"{found.summary}; `keepmind status` says more" if found.running else None
    with open_engine(home, start_workers=False) as engine:
        engine.pause() if args.switch == "pause" else engine.resume()
        memory = engine.status()
    if why is not None:
        # The switch lives in the store, which the running Keepmind reads on every turn and recall.
        print(f"memory: {memory['status']} (set in the store, which the running Keepmind reads: {why})")
    else:
        print(f"memory: {memory['status']} (no Keepmind is running for {home}: it starts that way)")
    return 0
