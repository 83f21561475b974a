"""The layers flow one way: desktop -> webui -> engine. A wrong arrow fails here."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {
    "engine": {"webui", "desktop", "flask", "waitress", "pystray", "werkzeug", "jinja2"},
    "webui": {"desktop", "pystray"},
}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_respect_the_layers(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no Python files found in {package}/"
    wrong = {str(f.relative_to(ROOT)): sorted(imported_roots(f) & FORBIDDEN[package]) for f in files}
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_checker_sees_a_wrong_arrow(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom flask import Flask\ndef f():\n    import desktop.cli\n")
    assert imported_roots(bad) & FORBIDDEN["engine"] == {"flask", "desktop"}
