"""`keepmind bench api` runs end to end (a smoke test of the command; its numbers are not asserted)."""

from __future__ import annotations

import json

from keepmind.desktop.cli import main

ROUTES = {"status", "sessions", "find_memories", "get_memories", "recall", "turns", "checkpoints",
          "store_memory", "update_memory"}


def test_bench_api_reports_every_route_and_zero_errors(tmp_path, capsys):
    out_file = tmp_path / "bench.json"
    code = main(["bench", "api", "--clients", "2", "--requests", "16", "--memories", "50",
                 "--json", str(out_file)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "0 errors" in printed
    results = json.loads(out_file.read_text())
    assert results["errors"] == 0 and set(results["routes"]) == ROUTES
    assert all(r["n"] > 0 and r["p95_ms"] >= r["p50_ms"] > 0 for r in results["routes"].values())
