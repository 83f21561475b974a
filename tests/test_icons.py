"""The tray icons exist for every state and match their sources (render.py)."""

import importlib.util
from pathlib import Path

ICONS = Path(__file__).resolve().parent.parent / "icons"


def test_icons_for_every_state_match_what_render_produces(tmp_path):
    spec = importlib.util.spec_from_file_location("render", ICONS / "render.py")
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    render.main(tmp_path)
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == sorted(f"keepmind-{s}{suffix}" for s in ("healthy", "degraded", "paused")
                          for suffix in (".svg", "-16.png", "-22.png", "-32.png", "-64.png"))
    for name in made:
        assert (ICONS / name).read_bytes() == (tmp_path / name).read_bytes(), f"{name} is stale: run icons/render.py"
        if name.endswith(".png"):
            assert (ICONS / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
