"""Small stores for recall tests: a few facts about one user."""

from __future__ import annotations

FACTS = [
    ("Coffee", "The user drinks oat-milk flat whites every morning."),
    ("Dentist", "The user's dentist appointment is on 14 March at the Elm Street clinic."),
    ("Marathon", "The user is training for the Berlin marathon in September."),
    ("Sister", "The user's sister Maya lives in Lisbon and works as an architect."),
    ("Laptop", "The user's work laptop is a ThinkPad X1 running Fedora."),
]


# Recall budgets no loaded CI machine runs out of. A test about recall's choices uses these, so a
# slow moment cannot turn its gate into a degraded one; the budgets are tested with explicit values.
UNHURRIED = {"timeout_ms": 10_000.0, "embed_budget_ms": 10_000.0, "gate_budget_ms": 10_000.0}
UNHURRIED_SETTINGS = {f"memory__recall__{name}": int(value) for name, value in UNHURRIED.items()}


def fill(engine, session_id, facts=FACTS):
    return [engine.store(session_id, title, body).id for title, body in facts]


def exported_world(tmp_path, make_engine, *, anchor: str | None = None) -> dict:
    """A home with a living document (two revisions) and a record, and its JSON Lines export (the
    import tests change rows of it): {"home", "engine", "sid", "doc", "rec", "rows"}."""
    import json

    from keepmind.desktop.cli import main as cli

    home = tmp_path / "home"
    engine = make_engine(home)
    sid = engine.open_session("personal", "work")
    doc = engine.store(sid, "Editor", "The user writes code in Helix.", anchor=anchor).id
    engine.update(sid, doc, old_text="Helix", new_text="Helix with gruvbox")
    rec = engine.store(sid, "Trip", "Flew to Lisbon on 3 May.", memory_class="evidence").id
    export = tmp_path / "export.jsonl"
    assert cli(["export", "--home", str(home), "-o", str(export)]) == 0
    rows = [json.loads(line) for line in export.read_text().splitlines()]
    return {"home": home, "engine": engine, "sid": sid, "doc": doc, "rec": rec, "rows": rows}


def import_rows(capsys, home, rows, path) -> tuple[int, str]:
    """`keepmind import` of these JSON Lines rows (written to `path`) into `home`: (exit code,
    what it printed). Never a traceback."""
    import json

    from keepmind.desktop.cli import main as cli

    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = cli(["import", str(path), "--home", str(home)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out
