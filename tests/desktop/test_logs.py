"""The data dir's log file: INFO events of every keepmind logger, rotated by size."""

from __future__ import annotations

import logging

from keepmind.desktop.process.logs import log_path, remove_file_log, setup_file_log


def test_named_events_go_to_a_size_capped_rotating_file(tmp_path):
    home = tmp_path / "home"
    handler = setup_file_log(home, max_bytes=2_000, backups=2)
    try:
        log = logging.getLogger("keepmind.recall")
        log.info("memory_recall_gate_degraded reason=sub_budget_exceeded")
        logging.getLogger("keepmind.models").debug("memory_embedding_keep_warm_failed")  # below INFO: not kept
        for i in range(200):
            log.info("memory_recall_coverage_gap filler=%d %s", i, "x" * 40)
    finally:
        remove_file_log(handler)
    files = sorted(p.name for p in log_path(home).parent.iterdir())
    assert files == ["keepmind.log", "keepmind.log.1", "keepmind.log.2"]  # capped: two backups, no more
    assert all(p.stat().st_size <= 2_000 for p in log_path(home).parent.iterdir())
    text = "".join(p.read_text() for p in log_path(home).parent.iterdir())
    assert "memory_recall_coverage_gap filler=199" in text and "keep_warm_failed" not in text


def test_serve_log_of_background_starts_is_rotated_not_grown_without_end(tmp_path):
    from keepmind.desktop.process.client import rotate_serve_log

    log = tmp_path / "serve.log"
    log.write_bytes(b"old start\n" * 10)
    rotate_serve_log(log, max_bytes=1_000)
    assert log.exists() and not (tmp_path / "serve.log.1").exists()  # small: kept as it is
    log.write_bytes(b"x" * 1_001)
    rotate_serve_log(log, max_bytes=1_000)
    assert not log.exists() and (tmp_path / "serve.log.1").read_bytes() == b"x" * 1_001
    rotate_serve_log(tmp_path / "none.log")  # no log yet: nothing to do, no error
