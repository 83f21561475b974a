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


def _apart(nodes) -> float:
    return min(((p.x - q.x) ** 2 + (p.y - q.y) ** 2) ** 0.5 for i, p in enumerate(nodes) for q in nodes[i + 1:])


def test_thirty_neighbours_do_not_sit_on_one_another_and_a_shared_one_sits_amid_its_ties():
    """A walk's picture of 29 friends read "Ta", "S n", "Un": one tight ring for any number of them;
    and a city four friends live in sat by the first of them."""
    a = [anchor(i) for i in range(34)]
    friends, cities = a[1:30], a[30:]
    edges = [edge(i, a[0], f) for i, f in enumerate(friends)]
    edges += [edge(100 + i, f, cities[0]) for i, f in enumerate(friends[:4])]  # four friends live in one city
    edges += [edge(200 + i, friends[10 + i], c) for i, c in enumerate(cities[1:])]
    nodes, _ = layout("a0", a, edges)
    ring = [n for n in nodes if n.depth == 1]
    assert len(ring) == 29 and _apart(ring) >= 48  # a node and its name's room (was 26)
    outer = [n for n in nodes if n.depth == 2]
    assert _apart(outer) >= 40
    by_id = {n.id: n for n in nodes}
    import math
    bearing = {n.id: math.atan2((n.y - HEIGHT / 2) / 0.8, n.x - WIDTH / 2) for n in ring}
    ties = [bearing[f.id] for f in friends[:4]]
    mean = math.atan2(sum(map(math.sin, ties)), sum(map(math.cos, ties)))
    city = by_id[cities[0].id]
    assert abs(math.atan2((city.y - HEIGHT / 2) / 0.85, (city.x - WIDTH / 2) / 1.35) - mean) < 0.35


def test_no_relation_label_is_laid_over_a_name_in_a_star_or_on_a_vertical_edge():
    """A walk's picture read "Porto / lives in": the label of a vertical spoke sat under its far end's name."""
    from keepmind.webui.graph_svg import label_box, name_box

    def overlap(p, q):
        return p[0] < q[2] and q[0] < p[2] and p[1] < q[3] and q[1] < p[3]

    for spokes in (2, 3, 8):  # two: one straight up, one straight down
        a = [anchor(i) for i in range(spokes + 2)]
        edges = [edge(i, a[0], a[i]) for i in range(1, spokes + 1)] + [edge(99, a[1], a[-1])]  # a tie above the top
        nodes, lines = layout("a0", a, edges)
        names = [name_box(n) for n in nodes]
        circles = [(n.x - 14, n.y - 14, n.x + 14, n.y + 14) for n in nodes]
        top = min((n for n in nodes if n.depth == 1), key=lambda n: n.y)
        assert top.name_y < top.y  # a name above the centre sits above its node, away from the edge into it
        labels = [label_box(line) for line in lines]
        for line, box in zip(lines, labels):
            assert not [b for b in names + circles if overlap(box, b)], (spokes, line.relation, box)
        assert not [(i, j) for i, p in enumerate(labels) for j, q in enumerate(labels[i + 1:]) if overlap(p, q)]
