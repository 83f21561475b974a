"""The graph picture's layout: every anchor placed once, the centre in the middle, retired edges
marked, and a view box that fits what is drawn."""

from __future__ import annotations

from keepmind.engine import Anchor, Edge
from keepmind.webui.graph_svg import HEIGHT, WIDTH, layout, view_box


def anchor(i):
    return Anchor(f"a{i}", f"Anchor {i}", "concept", "personal", "work")


def edge(i, a, b, current=True):
    return Edge(f"e{i}", a.id, a.name, "knows", b.id, b.name, 0, None if current else 5, None, 0.8)


def test_layout_places_each_anchor_once_around_the_centre():
    a = [anchor(i) for i in range(6)]
    edges = [edge(1, a[0], a[1]), edge(2, a[0], a[2], current=False), edge(3, a[1], a[3]), edge(4, a[2], a[4])]
    nodes, lines = layout("a0", a, edges)
    by_id = {n.id: n for n in nodes}
    assert len(nodes) == 6 and (by_id["a0"].x, by_id["a0"].y) == (WIDTH / 2, HEIGHT / 2)
    assert by_id["a1"].depth == 1 and by_id["a3"].depth == 2 and by_id["a5"].depth == 2  # a5: unreachable now
    assert len({(n.x, n.y) for n in nodes}) == 6
    assert [(line.id, line.current) for line in lines] == [("e1", True), ("e2", False), ("e3", True), ("e4", True)]
    assert lines[1].title.endswith("(retired)")
    x, y, w, h = map(float, view_box(nodes).split())
    assert all(x < n.x < x + w and y < n.y < y + h for n in nodes)
    assert view_box([]) == f"0 0 {WIDTH} {HEIGHT}"
