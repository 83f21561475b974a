"""`keepmind bench ...`: benchmark commands that print numbers (never timed tests)."""

from __future__ import annotations

from ..bench import api, find, models, recall, ui

# Each module exposes register(bench_subparsers).
BENCHES = (find, models, api, recall, ui)


def register(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks that print medians and p95s")
    bsub = p.add_subparsers(dest="bench_command", metavar="BENCH", required=True)
    for module in BENCHES:
        module.register(bsub)
