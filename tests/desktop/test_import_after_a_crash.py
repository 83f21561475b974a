"""`keepmind import` of Markdown run again after an import that stopped while curating (a crash, a
Ctrl-C: each unit is curated in its own transaction, so some were kept and the rest stayed queued)
finishes that import: it takes over the units still queued instead of queueing them twice, and
its summary counts what they became."""

from __future__ import annotations

import json

from keepmind.desktop.cli import main as cli
from keepmind.engine import open_engine
from keepmind.engine.db import scalar
from keepmind.engine.settings import defaults

SETTINGS = {"memory.embeddings.enabled": False}


def test_rerunning_an_import_stopped_half_way_finishes_it_and_counts_what_the_rest_became(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps(SETTINGS))
    notes = tmp_path / "notes.md"
    notes.write_text("## Notes\n" + "".join(f"- Fact {i}: the user keeps ledger {i * 7} at home\n" for i in range(10)))
    with open_engine(home, settings=defaults().with_overrides(memory__embeddings__enabled=False),
                     start_workers=False) as eng:
        report = eng.import_path(notes, audience="personal", boundary="default")
        assert report["queued"] == 10
        for _ in range(4):  # curated 4 units, then it stopped: what a crash leaves (the 5th rolled back)
            assert eng.writepath.curation.run_once().action == "create"
    assert cli(["import", str(notes), "--home", str(home), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["outcome"]["counts"]["kept"] == 6
    assert again["outcome"]["skipped_reasons"] == {"already stored": 4}  # kept before it stopped
    assert again["queued"] == 10 and again["resumed"] == 6
    with open_engine(home, settings=defaults().with_overrides(memory__embeddings__enabled=False),
                     start_workers=False) as eng, eng.db.snapshot() as conn:
        assert scalar(conn, "SELECT COUNT(*) FROM memory_documents") == 10
        assert scalar(conn, "SELECT COUNT(*) FROM memory_checkpoints") == 14  # the 6 left were not queued twice
        assert scalar(conn, "SELECT COUNT(*) FROM memory_checkpoints WHERE status != 'completed'") == 0
    assert cli(["import", str(notes), "--home", str(home), "--json"]) == 0  # once finished, a rerun queues anew
    third = json.loads(capsys.readouterr().out)
    assert third["resumed"] == 0 and third["outcome"]["skipped_reasons"] == {"already stored": 10}
