"""The CLI's store commands, in-process and through the installed console script."""

import json
import subprocess
import sys

from keepmind.desktop.cli import main
from keepmind.engine import open_engine
from keepmind.engine.settings import defaults


def test_stats_on_an_empty_home(tmp_path, capsys):
    (tmp_path / "h").mkdir()
    assert main(["stats", "--home", str(tmp_path / "h"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"] == 0


def test_reading_commands_refuse_a_data_dir_that_does_not_exist(tmp_path, capsys):
    missing = tmp_path / "keepmnid"
    for argv in (["stats"], ["doctor"], ["token", "show"], ["export", "-o", str(tmp_path / "x.jsonl")],
                 ["memories", "list"], ["sessions", "list"], ["checkpoints", "list"]):
        assert main([*argv, "--home", str(missing)]) == 2, argv
        err = capsys.readouterr().err
        assert f"no Keepmind data dir at {missing}" in err and "the default is" in err, argv
    assert not missing.exists()
    a_file = tmp_path / "file"
    a_file.write_text("not a folder")
    assert main(["stats", "--home", str(a_file)]) == 2
    assert "is a file, not a data dir" in capsys.readouterr().err


def test_commands_that_start_keepmind_create_the_data_dir_and_say_so(tmp_path, capsys):
    new = tmp_path / "new" / "home"
    export = tmp_path / "e.jsonl"
    export.write_text('{"type": "header", "format": "keepmind-export", "version": 1}\n')
    main(["import", "--home", str(new), str(export)])
    assert f"created a new, empty data dir at {new}" in capsys.readouterr().err
    assert new.is_dir() and oct(new.stat().st_mode & 0o777) == "0o700"


def test_export_import_through_the_cli(tmp_path, capsys):
    src, dst = tmp_path / "src", tmp_path / "dst"
    with open_engine(src, settings=defaults(), start_workers=False) as eng:
        sid = eng.open_session("personal", "work")
        eng.store(sid, "Airline", "member of Flying Blue")
    out = tmp_path / "e.jsonl"
    assert main(["export", "--home", str(src), "-o", str(out)]) == 0
    assert main(["import", "--home", str(dst), str(out)]) == 0
    assert "imported 1 memory from" in capsys.readouterr().out  # counted as the export counts it
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
