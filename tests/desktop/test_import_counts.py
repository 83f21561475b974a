"""`keepmind import` of an export counts what `keepmind export` counted: the memories (as `stats`
counts them), and apart from them the deleted memories and earlier versions that travel with
them, so a person can check that an export round-trips."""

from __future__ import annotations

import json
import re

from keepmind.desktop.cli import main as cli
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults


def test_an_import_counts_the_memories_its_export_counted_not_its_rows(tmp_path, capsys):
    home = tmp_path / "home"
    with open_engine(home, settings=defaults(), start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        doc = eng.store(sid, "Editor", "The user writes code in Helix.").id
        eng.update(sid, doc, old_text="Helix", new_text="Helix with gruvbox")  # a second revision
        trip = eng.store(sid, "Trip", "Flew to Lisbon on 3 May.", memory_class="evidence").id
        eng.update(sid, trip, new_content="Flew to Lisbon on 4 May.")  # an edited record: an earlier version
        eng.store(sid, "Airline", "The user flies with KLM.")
        wrong = eng.store(sid, "Office", "The office is in Paris.").id
        eng.update(sid, wrong, delete=True)  # deleted as wrong: travels for its tombstone
        gone = eng.store(sid, "Hotel", "Stayed at the Ritz.", memory_class="evidence").id
        eng.update(sid, gone, delete=True)  # a deleted record
    assert cli(["stats", "--json", "--home", str(home)]) == 0
    stats = json.loads(capsys.readouterr().out)
    export = tmp_path / "all.jsonl"
    assert cli(["export", "--home", str(home), "-o", str(export)]) == 0
    said = capsys.readouterr().out.strip()
    exported = int(re.match(r"exported (\d+) memories to ", said).group(1))
    assert exported == stats["documents"] + stats["records"] == 3
    assert said.endswith(" (with 2 deleted memories, kept so their tombstones hold and 1 earlier version of edited "
                         "records)")

    fresh = tmp_path / "fresh"
    assert cli(["import", str(export), "--home", str(fresh), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["imported"] == exported and report["skipped"] == 0
    assert (report["deleted"], report["earlier"]) == (2, 1)  # what travelled with them, as the export said
    assert cli(["import", str(export), "--home", str(fresh)]) == 0
    assert re.match(r"imported 0 memories.*, skipped 3 already present", capsys.readouterr().out)
    assert cli(["stats", "--json", "--home", str(fresh)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["documents"] + again["records"] == exported
    assert cli(["export", "--home", str(fresh), "-o", str(tmp_path / "again.jsonl")]) == 0
    assert capsys.readouterr().out.strip() == said.replace(str(export), str(tmp_path / "again.jsonl"))
