"""The CLI's store commands, in-process and through the installed console script."""

import json
import subprocess
import sys

from keepmind.desktop.cli import main
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults


def test_stats_on_an_empty_home(tmp_path, capsys):
    assert main(["stats", "--home", str(tmp_path / "h"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 0


def test_export_import_through_the_cli(tmp_path, capsys):
    src, dst = tmp_path / "src", tmp_path / "dst"
    with open_engine(src, settings=defaults(), start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        eng.store(sid, "Airline", "member of Flying Blue")
    out = tmp_path / "e.jsonl"
    assert main(["export", "--home", str(src), "-o", str(out)]) == 0
    assert main(["import", "--home", str(dst), str(out)]) == 0
    assert "imported 1 memories" in capsys.readouterr().out
    assert main(["--home", str(dst), "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 1


def test_cli_errors_are_messages_not_tracebacks(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "keepmind.json").write_text('{"memory.enabled": "maybe"}')
    proc = subprocess.run([sys.executable, "-m", "keepmind", "stats", "--home", str(home)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "memory.enabled" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "keepmind", "import", "--home", str(home), str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
