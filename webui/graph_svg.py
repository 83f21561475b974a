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
# What a name and a relation take on the page, estimated (the server has no fonts): the widths are
# generous for the default sans, so a label kept clear of these boxes is clear of the drawn text.
NAME_PX, LABEL_PX = 15.0, 13.0
EM = 0.62
RADIUS = {0: 16.0, 1: 11.0, 2: 11.0}
# Where along an edge its label may sit, nearest the middle first, and how far beside it when
# none of those is free.
ALONG = (0.5, 0.42, 0.58, 0.34, 0.66, 0.27, 0.73)
BESIDE = (0.0, 14.0, -14.0, 26.0, -26.0)


@dataclass(frozen=True)
class Node:
    id: str
    name: str
    type: str
    x: float
    y: float
    depth: int
    # The name's baseline: above a node that sits above the centre, below any other, so an edge,
    # which comes from the centre's side, never runs through the name at its far end.
    name_y: float = 0.0


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


Box = tuple[float, float, float, float]  # left, top, right, bottom


def _text_box(x: float, baseline: float, text: str, px: float, pad: float = 3.0) -> Box:
    half = len(text) * px * EM / 2 + pad
    return (x - half, baseline - px * 0.8 - pad, x + half, baseline + px * 0.25 + pad)


def _node_boxes(n: Node) -> list[Box]:
    r = RADIUS[min(n.depth, 2)] + 3
    return [(n.x - r, n.y - r, n.x + r, n.y + r), name_box(n)]


def _name_y(x: float, y: float, depth: int, cy: float) -> float:
    if depth == 0:
        return y + 34
    return y - 19 if y < cy - 1 else y + 27


def _label_spot(x1: float, y1: float, x2: float, y2: float, text: str, taken: list[Box]) -> tuple[float, float]:
    """The baseline of an edge's label: centred on the edge as near its middle as is free of every
    node, name and label already placed; beside the edge when no spot on it is; where it overlaps
    least when none is free at all."""
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    nx, ny = -(y2 - y1) / length, (x2 - x1) / length  # across the edge
    half = len(text) * LABEL_PX * EM / 2
    best, least = (0.0, 0.0), math.inf
    for side in BESIDE + (half + 8, -half - 8, half + 24, -half - 24):
        for t in ALONG:
            mx, my = x1 + (x2 - x1) * t + nx * side, y1 + (y2 - y1) * t + ny * side
            baseline = my + LABEL_PX * 0.3  # the text's middle on the point
            box = _label_box(mx, baseline, text)
            covered = sum(_area(box, b) for b in taken)
            if covered == 0:
                return mx, baseline
            if covered < least:
                best, least = (mx, baseline), covered
    return best


def _area(a: Box, b: Box) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def name_box(n: Node) -> Box:
    """The room a node's name takes, as the layout reckons it."""
    return _text_box(n.x, n.name_y, n.name, NAME_PX)


def label_box(line: Line) -> Box:
    """The room an edge's label takes, as the layout reckons it."""
    return _label_box(line.label_x, line.label_y, line.relation.replace("_", " "))


def _label_box(x: float, baseline: float, words: str) -> Box:
    return _text_box(x, baseline, words, LABEL_PX, 2.0)


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
    nodes = []
    for a in anchors:
        if a.id in pos:
            x, y, d = round(pos[a.id][0], 1), round(pos[a.id][1], 1), depth[a.id]
            nodes.append(Node(a.id, _short(a.name), a.type, x, y, d, round(_name_y(x, y, d, cy), 1)))
    taken = [b for n in nodes for b in _node_boxes(n)]
    lines = []
    for e in edges:
        if e.from_id not in pos or e.to_id not in pos:
            continue
        (x1, y1), (x2, y2) = pos[e.from_id], pos[e.to_id]
        words = e.relation.replace("_", " ")
        lx, ly = _label_spot(x1, y1, x2, y2, words, taken)
        taken.append(_label_box(lx, ly, words))
        lines.append(Line(e.id, round(x1, 1), round(y1, 1), round(x2, 1), round(y2, 1), e.relation, e.current,
                          round(lx, 1), round(ly, 1),
                          f"{by_id[e.from_id].name} {words} {by_id[e.to_id].name}"
                          + ("" if e.current else " (retired)")))
    return nodes, lines


__all__ = ["HEIGHT", "WIDTH", "Line", "Node", "label_box", "layout", "name_box", "view_box"]
