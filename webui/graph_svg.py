"""A picture of the graph around one anchor, laid out on the server as SVG.

Why SVG from the server rather than a JavaScript graph library: the neighbourhood is small (at
most a few dozen anchors, capped by the engine), a radial layout around the anchor is easy to
read and the same on every load, every node is a plain link (keyboard and screen reader reach
it, and a click walks to the next anchor without any script), it follows the page's light and
dark colours through CSS, it passes the strict Content-Security-Policy, and it costs no 400 KB
bundle. The centre sits in the middle; its neighbours on a ring; their neighbours on an outer
ring amid the ones they are tied to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

WIDTH, HEIGHT = 760, 520
RING = (0.0, 150.0, 235.0)
LABEL_CHARS = 22
# The room a node and its name take along a ring: a ring grows with what it holds, so thirty
# neighbours do not sit on one another's names (a walk's picture read "Ta", "S n", "PoMadrid").
NODE_ARC = (0.0, 64.0, 56.0)


@dataclass(frozen=True)
class Node:
    id: str
    name: str
    type: str
    x: float
    y: float
    depth: int


@dataclass(frozen=True)
class Line:
    id: str
    x1: float
    y1: float
    x2: float
    y2: float
    relation: str
    current: bool
    label_x: float
    label_y: float
    title: str


def _short(name: str) -> str:
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"


def view_box(nodes: list[Node], margin_x: float = 90.0, margin_y: float = 50.0,
             min_w: float = 640.0, min_h: float = 380.0) -> str:
    """The SVG viewBox around the drawn nodes (with room for labels), so a small neighbourhood
    fills the picture instead of sitting small in the middle of an empty one."""
    if not nodes:
        return f"0 0 {WIDTH} {HEIGHT}"
    xs, ys = [n.x for n in nodes], [n.y for n in nodes]
    x0, x1 = min(xs) - margin_x, max(xs) + margin_x
    y0, y1 = min(ys) - margin_y, max(ys) + margin_y
    if x1 - x0 < min_w:
        x0, x1 = (x0 + x1 - min_w) / 2, (x0 + x1 + min_w) / 2
    if y1 - y0 < min_h:
        y0, y1 = (y0 + y1 - min_h) / 2, (y0 + y1 + min_h) / 2
    return f"{x0:.0f} {y0:.0f} {x1 - x0:.0f} {y1 - y0:.0f}"


def layout(center_id: str, anchors: list, edges: list) -> tuple[list[Node], list[Line]]:
    """Positions for the anchors (Anchor values) and the edges (Edge values) between them."""
    by_id = {a.id: a for a in anchors}
    neighbours: dict[str, list[str]] = {a.id: [] for a in anchors}
    for e in edges:
        if e.from_id in neighbours and e.to_id in neighbours:
            neighbours[e.from_id].append(e.to_id)
            neighbours[e.to_id].append(e.from_id)
    depth = {center_id: 0}
    ring1 = [n for n in dict.fromkeys(neighbours.get(center_id, [])) if n != center_id]
    for n in ring1:
        depth[n] = 1
    ring2: list[str] = []
    for n in ring1:
        for m in neighbours[n]:
            if m not in depth:
                depth[m] = 2
                ring2.append(m)
    ring2 += [a.id for a in anchors if a.id not in depth]  # unreachable at this time: still shown
    for a in ring2:
        depth.setdefault(a, 2)
    cx, cy = WIDTH / 2, HEIGHT / 2
    r1 = max(RING[1], len(ring1) * NODE_ARC[1] / (2 * math.pi))
    r2 = max(RING[2], r1 + 95.0, len(ring2) * NODE_ARC[2] / (2 * math.pi * 1.35))
    pos = {center_id: (cx, cy)}
    angle: dict[str, float] = {}
    for i, n in enumerate(ring1):
        angle[n] = -math.pi / 2 + 2 * math.pi * i / max(1, len(ring1))
        pos[n] = (cx + r1 * math.cos(angle[n]), cy + r1 * 0.8 * math.sin(angle[n]))
    # An outer anchor sits at the mean bearing of the inner ones it is tied to (a city four friends
    # live in, amid them, not by the first of them), then the outer ring is spread so that no two
    # sit closer than a node and its name need; one tied to none (unreachable now) fills the gaps.
    wanted: list[tuple[float, str]] = []
    for m in ring2:
        ties = [angle[n] for n in dict.fromkeys(neighbours[m]) if n in angle]
        if ties:
            wanted.append((math.atan2(sum(map(math.sin, ties)), sum(map(math.cos, ties))), m))
    loose = [m for m in ring2 if m not in {w for _, w in wanted}]
    wanted.sort()
    gap = min(2 * math.pi / max(1, len(ring2)), NODE_ARC[2] / (r2 * 1.15))
    placed: list[tuple[float, str]] = []
    for a, m in wanted:
        if placed and a < placed[-1][0] + gap:
            a = placed[-1][0] + gap
        placed.append((a, m))
    start = placed[-1][0] + gap if placed else -math.pi / 2
    placed += [(start + gap * i, m) for i, m in enumerate(loose)]
    for a, m in placed:
        pos[m] = (cx + r2 * math.cos(a) * 1.35, cy + r2 * 0.85 * math.sin(a))
    nodes = [Node(a.id, _short(a.name), a.type, round(pos[a.id][0], 1), round(pos[a.id][1], 1), depth[a.id])
             for a in anchors if a.id in pos]
    lines = []
    for e in edges:
        if e.from_id not in pos or e.to_id not in pos:
            continue
        (x1, y1), (x2, y2) = pos[e.from_id], pos[e.to_id]
        # an edge from the centre is labelled nearer its far end, where the spokes are apart
        t = 0.62 if e.from_id == center_id else 0.38 if e.to_id == center_id else 0.5
        lines.append(Line(e.id, round(x1, 1), round(y1, 1), round(x2, 1), round(y2, 1), e.relation, e.current,
                          round(x1 + (x2 - x1) * t, 1), round(y1 + (y2 - y1) * t - 4, 1),
                          f"{by_id[e.from_id].name} {e.relation.replace('_', ' ')} {by_id[e.to_id].name}"
                          + ("" if e.current else " (retired)")))
    return nodes, lines


__all__ = ["HEIGHT", "WIDTH", "Line", "Node", "layout", "view_box"]
