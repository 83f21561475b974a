"""The layers flow one way: desktop -> webui -> engine, and the outer two reach the engine only
through its facade. A wrong arrow, a reach into the engine's modules, or an import cycle fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The repository's folders and the names they install under (pyproject.toml's package-dir).
PACKAGES = {"engine": "keepmind.engine", "webui": "keepmind.webui", "desktop": "keepmind.desktop",
            "keepmind": "keepmind"}
LAYERS = ("engine", "webui", "desktop")
FORBIDDEN = {
    "engine": {"keepmind.webui", "keepmind.desktop", "flask", "waitress", "pystray", "werkzeug", "jinja2"},
    "webui": {"keepmind.desktop", "pystray"},
}
# The engine's insides the outer layers must not touch: they go through Engine's methods.
FACADE_ONLY = {"keepmind.engine.sessions", "keepmind.engine.tokens", "keepmind.engine.store", "keepmind.engine.db"}
OUTER = ("webui", "desktop")


def module_name(path: Path) -> str:
    folder = path.relative_to(ROOT).parts[0]
    parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PACKAGES[folder], *parts])


def all_modules() -> dict[str, Path]:
    return {module_name(f): f for folder in PACKAGES for f in sorted((ROOT / folder).rglob("*.py"))}


def imports(path: Path, name: str | None = None, known: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """Every module a file imports (module and function level), absolute. `from X import y` gives
    `X.y` when that is one of the `known` modules (a submodule), else `X` and `X.y`."""
    name = name or "bad"
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out |= {sub} if sub in known else {target, sub}
    return out


def within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def engine_reaches(path: Path) -> list[str]:
    """`.db` read or `.write(...)` called on something named engine (its writer and database)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Attribute) and "engine" in ast.unparse(node.value).lower():
            if node.attr == "db":
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "write"
                and "engine" in ast.unparse(node.func.value).lower()):
            found.append(f"line {node.lineno}: {ast.unparse(node.func)}(...)")
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_respect_the_layers(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no Python files found in {package}/"
    wrong = {}
    for f in files:
        bad = sorted(m for m in imports(f, module_name(f)) for p in FORBIDDEN[package] if within(m, p))
        if bad:
            wrong[str(f.relative_to(ROOT))] = bad
    assert wrong == {}


@pytest.mark.parametrize("package", OUTER)
def test_outer_layers_reach_the_engine_only_through_its_facade(package):
    wrong = {}
    for f in sorted((ROOT / package).rglob("*.py")):
        bad = sorted({m for m in imports(f, module_name(f)) for p in FACADE_ONLY if within(m, p)})
        bad += engine_reaches(f)
        if bad:
            wrong[str(f.relative_to(ROOT))] = bad
    assert wrong == {}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    known = set(modules)
    return {name: {m for m in imports(path, name, known) if m in modules and m != name}
            for name, path in modules.items()}


def test_no_import_cycles_among_our_modules():
    graph = import_graph()
    assert len(graph) > 80
    assert find_cycles(graph) == []


def test_the_checkers_see_a_wrong_arrow_a_reach_and_a_cycle(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom flask import Flask\nfrom keepmind.engine import tokens\n"
                   "def f(engine):\n    import keepmind.desktop.cli\n    engine.db.snapshot()\n"
                   "    engine.write(print)\n    import sys; sys.stderr.write('fine')\n")
    found = imports(bad)
    assert {m for m in found for p in FORBIDDEN["engine"] if within(m, p)} == {"flask", "flask.Flask", "keepmind.desktop.cli"}
    assert {m for m in found for p in FACADE_ONLY if within(m, p)} == {"keepmind.engine.tokens"}
    assert sorted(engine_reaches(bad)) == ["line 6: engine.db", "line 7: engine.write(...)"]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
