"""The graph's relation labels can be read: a walk found "Porto / lives in" stacked on a vertical
edge, with the line running through both words."""

from __future__ import annotations

import pytest

from keepmind.engine import Relation
from support.browser import SHOTS, sign_in

STAR = [("lives_in", "Porto", "place"), ("sister_of", "User", "person"), ("works_at", "Acme Robotics", "organisation"),
        ("owns", "Rex", "pet"), ("knows", "Miguel", "person"), ("studied_at", "University of Porto", "organisation"),
        ("likes", "Hiking", "concept")]

# The rendered boxes of the labels, the names and the circles, and whether any label is painted before a line.
DRAWN = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom,
    [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim()]; };
  const svg = document.querySelector('svg.graph');
  const all = [...svg.querySelectorAll('line, text.label')];
  return {labels: [...svg.querySelectorAll('text.label')].map(box),
          names: [...svg.querySelectorAll('.node text')].map(box),
          circles: [...svg.querySelectorAll('.node circle')].map(box),
          label_before_a_line: all.findIndex(e => e.matches('text.label')) < all.map(e => e.tagName).lastIndexOf('line'),
          unboxed: [...svg.querySelectorAll('text')].filter(e => !e.getAttribute('filter')).length};
}"""


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("relations, depth", [
    (STAR, 1),  # a star of seven: the first spoke is vertical
    (STAR, 2),  # and a chord between two of them
    (STAR[:2] + [("owns", "Rex", "pet")], 2),  # three spokes, one straight up, and Porto's own tie above it
    (STAR[:1] + STAR[4:5], 2),  # two spokes: one straight up, one straight down
], ids=["star", "star-depth-2", "three", "vertical"])
def test_relation_labels_sit_clear_of_every_name_and_over_every_line(page, live, relations, depth):
    eng = live.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Anna", "The user's sister Anna lives in Porto.", anchor="Anna", anchor_type="person",
              relations=[Relation(*r) for r in relations])
    eng.store(sid, "Miguel in Porto", "Miguel lives in Porto.", anchor="Miguel", anchor_type="person",
              relations=[Relation("lives_in", "Porto", "place")])
    eng.store(sid, "Porto's twin", "Porto is twinned with Bordeaux.", anchor="Porto", anchor_type="place",
              relations=[Relation("twinned_with", "Bordeaux", "place")])
    anna = next(a.id for a in eng.anchors(eng.viewer(eng.get_token("local"))) if a.name == "Anna")
    sign_in(page, live)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.goto(f"{live.url}/anchors/{anna}/graph?depth={depth}")
        page.wait_for_load_state("networkidle")
        page.locator("svg.graph").screenshot(path=str(SHOTS / f"graph-labels-{len(relations)}-{depth}-{scheme}.png"))
    drawn = page.evaluate(DRAWN)
    assert "lives in" in [label[4] for label in drawn["labels"]]
    for label in drawn["labels"]:
        clash = [n[4] for n in drawn["names"] if overlap(label, n)] + [c for c in drawn["circles"] if overlap(label, c)]
        assert not clash, (label, clash)
    labels = drawn["labels"]
    assert not [(a[4], b[4]) for i, a in enumerate(labels) for b in labels[i + 1:] if overlap(a, b)]
    assert not drawn["label_before_a_line"]  # no line is painted over a label
    assert drawn["unboxed"] == 0  # each word sits on a box of the picture's colour: no line shows through its gaps
