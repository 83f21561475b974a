"""What the CLI does with input it should not take and a data dir it cannot use: a broken or
read-only data dir is one line naming the file (never a traceback), numbers out of range are
refused by name with exit 2, stored text never reaches the terminal as escape sequences, the
local token is replaced rather than revoked into a dead end, and --print-config carries the data
dir in effect."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from keepmind.desktop.cli import build_parser, main
from keepmind.desktop.process.daemon import ensure_local_token
from keepmind.desktop.process.files import read_token_file
from keepmind.engine import open_engine, private
from keepmind.engine.settings import defaults

QUIET = defaults().with_overrides(memory__embeddings__auto_download=False, memory__embeddings__enabled=False)
DOCTOR = "; `keepmind doctor` checks the data dir"
RESTORE = "stop Keepmind, move it (with its -wal and -shm files) aside, and `keepmind import` your last `keepmind export`"


def keepmind(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "keepmind", *argv], capture_output=True, text=True, timeout=120,
                          **kw)


def a_store(home, memories: int = 0):
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        sid = eng.open_session("personal", "work", title="planning")
        for n in range(memories):
            eng.store(sid, f"Fact {n}", f"Fact number {n} about the user's garden. " * 30)
    return home


# -- 1. a data dir or database that cannot be used ---------------------------------------------------

def test_a_database_overwritten_with_garbage_is_one_line_that_names_it(tmp_path):
    home = a_store(tmp_path / "home")
    (home / "keepmind.db").write_bytes(b"this is not a database, it was overwritten " * 50)
    done = keepmind("memories", "list", "--home", str(home))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: {home / 'keepmind.db'} is not a Keepmind database (SQLite: file is "
                                        f"not a database): {RESTORE}{DOCTOR}"]


def _without_root_powers() -> list[str]:
    """A prefix that runs a command without root's power to write any file, so a write-protected
    file is write-protected to it (nothing when not root)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a write-protected file cannot be made so")
    return ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def test_a_write_protected_database_is_one_line_not_a_healthy_server_that_fails_every_write(tmp_path):
    home = a_store(tmp_path / "home")
    (home / "keepmind.db").chmod(0o400)
    home.chmod(0o500)
    try:
        done = subprocess.run([*_without_root_powers(), sys.executable, "-m", "keepmind", "memories", "list",
                               "--home", str(home)], capture_output=True, text=True, timeout=120)
    finally:
        home.chmod(0o700)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == [f"error: {home / 'keepmind.db'} is read-only (SQLite: "
                                        "keepmind.db or its folder is write-protected: it opened read-only): "
                                        f"Keepmind must be able to write it{DOCTOR}"]


def test_doctor_names_a_garbage_database_as_its_finding_without_a_traceback(tmp_path):
    home = a_store(tmp_path / "home")
    (home / "keepmind.db").write_bytes(os.urandom(4096))
    done = keepmind("doctor", "--home", str(home))
    assert done.returncode == 2 and done.stderr == ""  # no traceback, and no SQLite log lines either
    assert (f"[FAIL] Database: {home / 'keepmind.db'} is not a Keepmind database (SQLite: file is not a database): "
            f"{RESTORE}\n") in done.stdout
    assert "[ok  ] Server: not running" in done.stdout


def test_a_truncated_database_is_one_line_in_every_command(tmp_path, capsys):
    home = a_store(tmp_path / "home", memories=200)
    db = home / "keepmind.db"
    with open(db, "r+b") as fh:
        fh.truncate(db.stat().st_size // 3)
    expected = f"error: {db} is damaged (SQLite: database disk image is malformed): {RESTORE}{DOCTOR}"
    for argv in (["memories", "list"], ["sessions", "list"], ["stats"], ["status"], ["token", "list"],
                 ["export", "-o", str(tmp_path / "out.jsonl")]):
        assert main([*argv, "--home", str(home)]) == 2, argv
        out, err = capsys.readouterr()
        assert err.splitlines() == [expected], argv
    assert main(["doctor", "--home", str(home)]) == 2
    out, err = capsys.readouterr()
    assert f"[FAIL] Database: {db} is damaged (SQLite: database disk image is malformed): {RESTORE}" in out


def test_a_read_only_data_dir_is_one_line_that_names_it(tmp_path):
    """A real read-only file system: the data dir bind-mounted read-only in a mount namespace of
    its own (root ignores file modes, so a chmod would prove nothing); the host sees no mount."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here to mount the data dir read-only")
    home = a_store(tmp_path / "home")
    script = ('mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99; shift; '
              'exec "$@"')
    done = subprocess.run(["unshare", "--mount", "--map-root-user", "sh", "-c", script, "sh", str(home),
                           sys.executable, "-m", "keepmind", "memories", "list", "--home", str(home)],
                          capture_output=True, text=True, timeout=120)
    if done.returncode == 99 or "unshare:" in done.stderr:
        pytest.skip(f"cannot mount read-only here: {done.stderr.strip()}")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: cannot use the data dir {home}: Read-only file system (Keepmind "
                                        f"must be able to write there){DOCTOR}"]


def test_a_data_dir_the_disk_refuses_is_one_line_and_a_doctor_finding(tmp_path, capsys, monkeypatch):
    """The read-only failure where a mount namespace is not allowed: the OSError the disk gives
    (EROFS) raised where the data dir is made owner-only."""
    home = a_store(tmp_path / "home")
    made = private.make_private_dir

    def read_only(path):
        if path == home:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return made(path)

    monkeypatch.setattr(private, "make_private_dir", read_only)
    assert main(["memories", "show", "doc-" + "0" * 32, "--home", str(home)]) == 2
    reason = os.strerror(errno.EROFS)
    assert capsys.readouterr().err.splitlines() == [
        f"error: cannot use the data dir {home}: {reason} (Keepmind must be able to write there){DOCTOR}"]
    assert main(["doctor", "--home", str(home)]) == 2
    out, err = capsys.readouterr()
    assert f"[FAIL] Data dir: cannot use the data dir {home}: {reason} (Keepmind must be able to write there)\n" in out
    assert err == ""


def test_a_data_dir_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    home = tmp_path / "notes.txt" / "keepmind"
    memory = tmp_path / "MEMORY.md"
    memory.write_text("# Memory\n\n- The user drinks green tea.\n")
    assert main(["import", str(memory), "--home", str(home)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: cannot use the data dir {home}: {tmp_path / 'notes.txt'} is a file, not a folder (Keepmind must "
        f"be able to write there){DOCTOR}"]


def test_an_unwritable_file_outside_the_data_dir_is_named_without_blaming_the_data_dir(tmp_path, capsys):
    home = a_store(tmp_path / "home")
    (tmp_path / "blocker").write_text("a file")
    for target in (tmp_path / "blocker" / "out.jsonl", tmp_path / "blocker" / "md"):
        assert main(["export", "-o", str(target), "--home", str(home)]) == 2
        assert capsys.readouterr().err.splitlines() == [f"error: {tmp_path / 'blocker'} is a file, not a folder"]


# -- 2. numbers out of range -------------------------------------------------------------------------

@pytest.mark.parametrize("argv, option, said", [
    (["serve", "--port", "99999"], "--port", "99999 is not a port: give 1 to 65535, or 0 for any free port"),
    (["serve", "--port", "-5"], "--port", "-5 is not a port: give 1 to 65535, or 0 for any free port"),
    (["serve", "--port", "http"], "--port", "'http' is not a whole number"),
    (["serve", "--stop-after-idle", "-1"], "--stop-after-idle", "-1 is negative: give 0 or more"),
    (["serve", "--stop-after-idle", "nan"], "--stop-after-idle", "'nan' is not a finite number"),
    (["stop", "--wait", "-2"], "--wait", "-2 is negative: give 0 or more"),
    (["memories", "list", "--limit", "0"], "--limit", "0 is too small: give 1 or more"),
    (["memories", "list", "--limit", "-3"], "--limit", "-3 is too small: give 1 or more"),
    (["memories", "list", "--limit", "99999999999999999999"], "--limit",
     "99999999999999999999 is too large: give at most 1,000,000,000"),
    (["sessions", "list", "--limit", "0"], "--limit", "0 is too small: give 1 or more"),
    (["checkpoints", "list", "--limit", "-1"], "--limit", "-1 is too small: give 1 or more"),
    (["recall", "explain", "--last", "0"], "--last", "0 is too small: give 1 or more"),
    (["eval", "graph", "--data", "x.json", "--examples", "-1"], "--examples", "-1 is negative: give 0 or more"),
    (["recall", "calibrate", "--target-retention", "1.5"], "--target-retention", "1.5 is not a share: give 0 to 1"),
    (["bench", "find", "--queries", "0"], "--queries", "0 is too small: give 1 or more"),
    (["bench", "api", "--seconds", "0"], "--seconds", "0 is too small: give more than 0"),
    (["bench", "ui", "--requests", "0"], "--requests", "0 is too small: give 1 or more"),
])
def test_a_number_out_of_range_is_refused_by_name(argv, option, said, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].endswith(f": error: argument {option}: {said}"), err
    assert "Traceback" not in err


def test_the_edges_of_each_range_are_taken():
    parse = build_parser().parse_args
    assert parse(["serve", "--port", "0"]).port == 0 and parse(["serve", "--port", "65535"]).port == 65535
    assert parse(["serve", "--stop-after-idle", "0"]).stop_after_idle == 0
    assert parse(["stop", "--wait", "0"]).wait == 0
    assert parse(["memories", "list", "--limit", "1"]).limit == 1
    assert parse(["recall", "explain", "--last"]).last == 1 and parse(["recall", "explain", "--last", "3"]).last == 3


def test_a_refused_port_never_reaches_the_server(tmp_path):
    done = keepmind("serve", "--port", "-5", "--home", str(tmp_path / "home"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == ("keepmind serve: error: argument --port: -5 is not a port: give 1 to "
                                            "65535, or 0 for any free port")
    assert not (tmp_path / "home").exists()


# -- 3. stored text on a terminal ----------------------------------------------------------------------

TITLE = "Tea \x1b]0;owned\x07\u202eeulb"
BODY = "The user likes \x1b[31mred\x1b[0m tea.\r\nReally \u2066x\u2069\x9b2J\x7f done.\tok"
RAW = ("\x1b", "\x07", "\r", "\x9b", "\x7f", "\u202e", "\u2066", "\u2069")


def stored_as_written(eng, sid) -> str:
    """A memory holding TITLE and BODY as an older Keepmind stored them: text entering now loses
    its bidi and C0 controls (tests/engine/test_display_controls.py), what is stored may hold them."""
    memory = eng.store(sid, "Tea", "The user likes red tea.").id
    eng.db.write(lambda conn: conn.execute("UPDATE memory_documents SET title=?, body=? WHERE document_id=?",
                                           (TITLE, BODY, memory)))
    return memory


def test_stored_text_is_shown_escaped_never_as_terminal_control(tmp_path, capsys):
    home = tmp_path / "home"
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        sid = eng.open_session("personal", "work", title="plan \x1b[2J\u202e")
        memory = stored_as_written(eng, sid)
        eng.recall(sid, "Which tea does the user like?")
    shown = {}
    for argv in (["memories", "list"], ["memories", "show", memory], ["sessions", "list"],
                 ["recall", "explain", "--last"]):
        assert main([*argv, "--home", str(home)]) == 0, argv
        shown[argv[0] + " " + argv[1]] = capsys.readouterr().out
    for argv, out in shown.items():
        assert not any(c in out for c in RAW), (argv, out)
    assert r"Tea \x1b]0;owned\x07\u202eeulb" in shown["memories list"]
    assert ("The user likes \\x1b[31mred\\x1b[0m tea.\\x0d\nReally \\u2066x\\u2069\\x9b2J\\x7f done.\tok"
            in shown["memories show"])  # newline and tab stay: a memory's lines read as lines
    assert r"plan \x1b[2J\u202e" in shown["sessions list"]
    assert r"Tea \x1b]0;owned\x07\u202eeulb" in shown["recall explain"]  # the injected memory's title


def test_json_output_keeps_the_text_exactly_and_escapes_what_acts_on_a_terminal(tmp_path, capsys):
    home = tmp_path / "home"
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        sid = eng.open_session("personal", "work", title="Zürich \u202eplan")
        memory = stored_as_written(eng, sid)
    assert main(["memories", "show", memory, "--json", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in RAW) and json.loads(out)["content"] == BODY
    assert main(["memories", "list", "--json", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in RAW) and json.loads(out)["title"] == TITLE
    assert main(["sessions", "list", "--json", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "Zürich" in out and "\u202e" not in out and json.loads(out)["title"] == "Zürich \u202eplan"


# -- 4. the local token ----------------------------------------------------------------------------------

def test_revoking_the_local_token_replaces_it_so_keepmind_keeps_working(tmp_path, capsys):
    home = tmp_path / "home"
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        old = ensure_local_token(eng, home)
        old_id = eng.verify_token(old).id
    assert main(["token", "revoke", "local", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    new = read_token_file(home)
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        assert eng.verify_token(old) is None  # the old secret is dead
        fresh = eng.verify_token(new)
    assert fresh is not None and fresh.id != old_id and fresh.audience_ceiling == "personal"
    assert out.splitlines() == [f"revoked local ({old_id}); the local token is now {fresh.name} ({fresh.id}), in "
                                f"{home / 'token'}: Keepmind's own commands, the tray, MCP and the hooks use it"]


def test_the_local_token_of_a_running_keepmind_is_not_revoked(tmp_path, capsys, start_live):
    live = start_live(tmp_path / "home")
    try:
        assert main(["token", "revoke", "local", "--home", str(tmp_path / "home")]) == 2
        err = capsys.readouterr().err
        assert err.splitlines() == [
            f"error: local is the local token (in {tmp_path / 'home' / 'token'}), which the Keepmind running at "
            f"{live.url} and its tray, MCP and hooks use: stop it first (`keepmind stop`), then revoke local to "
            "replace it with a new one"]
        assert live.engine.verify_token(live.token) is not None
    finally:
        live.stop()


def test_revoke_local_always_means_the_live_local_token_also_after_a_rotation(tmp_path, capsys, start_live):
    home = tmp_path / "home"
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        ensure_local_token(eng, home)
    secrets = [read_token_file(home)]
    for _ in range(2):
        assert main(["token", "revoke", "local", "--home", str(home)]) == 0
        assert "the local token is now local (" in capsys.readouterr().out
        secrets.append(read_token_file(home))
    with open_engine(home, settings=QUIET, start_workers=False) as eng:
        assert [eng.verify_token(s) is not None for s in secrets] == [False, False, True]
        assert [t.name for t in eng.list_tokens()] == ["local"]
    live = start_live(home)
    try:
        assert main(["token", "revoke", "local", "--home", str(home)]) == 2
        assert "is the local token" in capsys.readouterr().err
        assert live.engine.verify_token(secrets[-1]) is not None
    finally:
        live.stop()


def test_revoking_a_revoked_token_says_so(tmp_path, capsys):
    home = a_store(tmp_path / "home")
    assert main(["token", "create", "agent1", "--home", str(home)]) == 0
    assert main(["token", "revoke", "agent1", "--home", str(home)]) == 0
    capsys.readouterr()
    assert main(["token", "revoke", "agent1", "--home", str(home)]) == 0
    assert "was revoked already, on " in capsys.readouterr().out
    assert main(["token", "create", "agent1", "--home", str(home)]) == 0  # the name is free again


def test_revoking_a_token_says_which_of_its_sessions_ended(tmp_path, capsys):
    home = a_store(tmp_path / "home")
    assert main(["token", "create", "agent1", "--ceiling", "personal", "--home", str(home)]) == 0
    with open_engine(home, settings=QUIET, start_workers=False) as engine:
        agent = engine.get_token("agent1")
        engine.open_session("personal", "work", token=agent)
        engine.open_session("personal", "work", token=agent)
    capsys.readouterr()
    assert main(["token", "revoke", "agent1", "--home", str(home)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(
        "; 2 sessions it had open have ended (what was said there is distilled)")


# -- 5. --print-config and KEEPMIND_HOME -----------------------------------------------------------------

def test_print_config_carries_a_data_dir_set_only_by_keepmind_home(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KEEPMIND_HOME", str(tmp_path / "from-env"))
    (tmp_path / "from-env").mkdir()
    (tmp_path / "relative-home").mkdir()
    assert main(["mcp", "--print-config", "--boundary", "myproject"]) == 0
    entry = json.loads(capsys.readouterr().out)["mcpServers"]["keepmind"]
    args = entry["args"]
    assert args[args.index("mcp"):] == ["mcp", "--home", str((tmp_path / "from-env").resolve()),
                                        "--boundary", "myproject"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KEEPMIND_HOME", "relative-home")  # made absolute: the client starts elsewhere
    assert main(["mcp", "--print-config"]) == 0
    args = json.loads(capsys.readouterr().out)["mcpServers"]["keepmind"]["args"]
    assert args[args.index("mcp"):] == ["mcp", "--home", str((tmp_path / "relative-home").resolve())]
    assert not any((tmp_path / "from-env").iterdir()) and not any((tmp_path / "relative-home").iterdir())


def test_a_folder_of_other_files_is_never_taken_for_a_data_dir_nor_made_owner_only(tmp_path, capsys):
    """`--home ~` by a slip: every command refused it but made everything under it 0700 and 0600."""
    folder = tmp_path / "notes"
    (folder / "sub" / "deep").mkdir(parents=True)
    (folder / "README.txt").write_text("mine")
    for path, mode in ((folder, 0o755), (folder / "sub", 0o755), (folder / "README.txt", 0o644)):
        path.chmod(mode)
    before = {p: stat.S_IMODE(p.stat().st_mode) for p in (folder, *folder.rglob("*"))}
    for argv in (["stats"], ["status"], ["doctor"], ["memories", "list"], ["pause"],
                 ["import", str(folder / "README.txt")]):
        assert main([*argv, "--home", str(folder)]) == 2, argv
        err = capsys.readouterr().err
        assert err.splitlines()[0] == (f"error: {folder} is not a Keepmind data dir: it holds README.txt and sub, and "
                                       "no keepmind.db. Keepmind keeps its data in a folder of its own (and makes "
                                       "everything in it owner-only): check --home and KEEPMIND_HOME, or name a new "
                                       "or empty folder"), argv
    assert {p: stat.S_IMODE(p.stat().st_mode) for p in (folder, *folder.rglob("*"))} == before
    assert not (folder / "keepmind.db").exists()
    # a folder holding only what Keepmind writes before its database (settings, models) is one
    seeded = tmp_path / "seeded"
    (seeded / "models").mkdir(parents=True)
    (seeded / "keepmind.json").write_text("{}")
    (seeded / ".DS_Store").write_text("")
    assert main(["stats", "--home", str(seeded)]) == 0 and (seeded / "keepmind.db").exists()
