"""`keepmind memories add TEXT`: a person adds a memory from a shell, curated as an agent's
store_memory is (a newcomer found no CLI command to write one, only `import` of a Markdown file)."""

from __future__ import annotations

import json

import pytest

from keepmind.desktop.cli import main as cli
from keepmind.engine import Scope, open_engine
from keepmind.engine.settings import defaults

QUIET = {"memory.embeddings.auto_download": False, "mcp": {"boundary": "work"}}


def _add(capsys, home, *argv) -> tuple[int, str, str]:
    code = cli(["memories", "add", *argv, "--home", str(home)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def _stored(home):
    with open_engine(home, settings=defaults().with_overrides(memory__embeddings__enabled=False),
                     start_workers=False) as eng:
        return [(i.body, i.audience, i.boundary) for i in eng.list_memories(Scope.viewer("personal", None), limit=50)]


@pytest.mark.offline_model
def test_a_memory_added_from_the_shell_is_curated_embedded_and_in_the_agents_scope(offline_models_home, capsys):
    home = offline_models_home
    (home / "keepmind.json").write_text(json.dumps(QUIET))
    code, out, _ = _add(capsys, home, "I always prefer a window seat when I fly.")
    kept = out.splitlines()[0]
    assert code == 0 and kept.startswith("kept as doc-") and kept.endswith(" in personal/work")
    assert out.splitlines()[1] == "embedded 1 memory with all-minilm-l6-v2"
    code, out, _ = _add(capsys, home, "I always prefer a window seat when I fly.")
    assert (code, out.strip()) == (1, "not kept: already stored")
    code, _, err = _add(capsys, home, "my wifi password is hunter2x")
    assert code == 1 and err.strip() == "not kept: secret-like content is never stored (a password)"
    code, out, _ = _add(capsys, home, "Anna is my sister.", "--title", "Sister", "--boundary", "family", "--json")
    said = json.loads(out)
    assert code == 0 and said["scope"] == {"audience": "personal", "boundary": "family"} and len(said["memory_ids"]) == 1
    assert sorted(_stored(home)) == [("Anna is my sister.", "personal", "family"),
                                     ("I always prefer a window seat when I fly.", "personal", "work")]
    assert _add(capsys, home, "x")[0] == 2  # says nothing: refused, as store_memory refuses it


def test_with_keepmind_running_the_running_one_curates_it(tmp_path, start_live, capsys):
    live = start_live(tmp_path / "home", start_workers=True)
    try:
        code, out, _ = _add(capsys, live.daemon.home, "The user's dentist is Dr Okafor on Elm Street.")
        assert code == 0 and out.startswith("kept as doc-") and "personal/default" in out
        # This home has no embedding model: it says so at once (it waited 20 s for a vector that
        # could not come, then said "embeds the rest as soon as its model is ready")
        assert out.splitlines()[1] == (f"the Keepmind at {live.url} has no embedding model installed: recall "
                                       "finds it by its words until one is (`keepmind models install-offline`), "
                                       "and embeds it then")
        memory_id = out.split()[2]
        sid = live.engine.open_session("personal", "default")
        assert [i.body for i in live.engine.get(sid, [memory_id]).items] == [
            "The user's dentist is Dr Okafor on Elm Street."]
    finally:
        live.stop()
