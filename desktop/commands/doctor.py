"""`keepmind doctor`: what needs a person's attention, with what to do about it."""

from __future__ import annotations

import json

from keepmind.engine import Check, EngineError, open_engine

from ..paths import home_of, home_option, load_home_settings
from ..process.health import check_server_of
from ..process.logs import log_path
from .failures import STORE_ERRORS, store_failure
from .quiet import quieted
from .terminal import for_terminal

MARK = {"pass": "ok  ", "warning": "WARN", "error": "FAIL"}


def register(sub) -> None:
    p = sub.add_parser("doctor", help="check the database, disk, queue, models, embeddings, gate and server")
    home_option(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_doctor)


def engine_checks(home) -> list[Check]:
    """The engine's checks on what is installed and stored (doctor never downloads: no hub call on
    any run); a store that cannot even be opened is itself the finding."""
    from .writepath import llm_api_key

    try:
        settings = load_home_settings(home)
        # the key from the variable memory.llm.api_key_env names, as `keepmind serve` reads it: without
        # it the check said the variable was unset however it was set, and never read the failures
        engine = open_engine(home, settings=settings, start_workers=False, llm_api_key=llm_api_key(settings))
    except EngineError:
        raise  # written for a person already (a bad setting, say): the CLI prints it
    except STORE_ERRORS as exc:  # the disk or the file: which, and what to do
        return [Check("Data dir" if isinstance(exc, OSError) else "Database", "error", store_failure(exc, home))]
    except Exception as exc:  # noqa: BLE001 - doctor reports what is wrong instead of a stack trace
        return [Check("Database", "error", f"cannot open the store in {home} ({type(exc).__name__}: "
                                           f"{' '.join(str(exc).split())[:200]}): stop Keepmind, copy keepmind.db "
                                           "aside, and restore from your last `keepmind export`")]
    with engine:
        engine.models.load(download=False, repair=False)
        return engine.doctor()


def cmd_doctor(args) -> int:
    home = home_of(args)
    with quieted("keepmind", args):  # doctor reports what it finds itself, not as log lines
        checks = engine_checks(home) + [check_server_of(home)]
    if args.json:
        print(json.dumps([c.as_dict() for c in checks], indent=2))
    else:
        for c in checks:
            print(f"[{MARK[c.level]}] {c.name}: {for_terminal(c.message)}")
        log = log_path(home)
        print(f"logs: {log}" if log.exists() else "logs: none yet (Keepmind has not run for this data dir)")
    return 2 if any(c.level == "error" for c in checks) else 1 if any(c.level == "warning" for c in checks) else 0
