"""Receipts kept before the epoch column existed still count for progressive exclusion."""

import json

import apsw

from keepmind.engine.migrations import MIGRATIONS, migrate
from keepmind.engine.recall import receipts


def test_receipts_written_before_the_epoch_column_keep_excluding_what_they_injected(tmp_path):
    conn = apsw.Connection(str(tmp_path / "old.db"))
    names = [name for name, _ in MIGRATIONS]
    upto = names.index("008_recall_events_epoch")
    migrate(conn, 0, MIGRATIONS[:upto])
    for rid, epoch, item in (("rcp-a", 0, "doc-1"), ("rcp-b", 1, "doc-2")):
        body = {"receipt": rid, "compaction_epoch": epoch, "injected": [{"id": item}]}
        conn.execute("INSERT INTO recall_events(receipt_id, session_id, query, receipt_json, injected_count,"
                     " created_at) VALUES (?, 'ses-1', 'q', ?, 1, 5)", (rid, json.dumps(body)))
        receipts.record_injections(conn, rid, [item], 5)
    assert migrate(conn, 0, MIGRATIONS[:upto + 1]) == ["008_recall_events_epoch"]
    assert receipts.injected_this_epoch(conn, "ses-1", 0) == {"doc-1"}
    assert receipts.injected_this_epoch(conn, "ses-1", 1) == {"doc-2"}
    assert receipts.injected_this_epoch(conn, "ses-2", 0) == frozenset()
