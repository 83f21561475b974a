"""`keepmind doctor`: what needs a person's attention, with what to do about it."""

from __future__ import annotations

import json

from keepmind.engine import open_engine

from ..paths import home_of, home_option

MARK = {"pass": "ok  ", "warning": "WARN", "error": "FAIL"}


def register(sub) -> None:
    p = sub.add_parser("doctor", help="check the database, queue, models and embeddings")
    home_option(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--wait", type=float, default=30.0, help="seconds to wait for models to load (default 30)")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args) -> int:
    with open_engine(home_of(args)) as engine:
        models = engine.models
        if models is not None:
            models.wait_ready(args.wait)
        checks = engine.doctor()
    if args.json:
        print(json.dumps([c.as_dict() for c in checks], indent=2))
    else:
        for c in checks:
            print(f"[{MARK[c.level]}] {c.name}: {c.message}")
    return 2 if any(c.level == "error" for c in checks) else 1 if any(c.level == "warning" for c in checks) else 0
