"""`keepmind bench ...`: benchmark commands that print numbers (never timed tests)."""

from __future__ import annotations

import importlib

# Each module exposes register(bench_subparsers).
BENCH_MODULES = (
    "keepmind.desktop.bench_find",
    "keepmind.desktop.bench_models",
    "keepmind.desktop.bench_api",
    "keepmind.desktop.bench_recall",
)


def register(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks that print medians and p95s")
    bsub = p.add_subparsers(dest="bench_command", metavar="BENCH", required=True)
    for name in BENCH_MODULES:
        importlib.import_module(name).register(bsub)
