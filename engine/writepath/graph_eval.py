"""What the knowledge graph holds when conversations are said turn by turn, without an LLM.

Each speaker of each LoCoMo conversation is a user of their own fresh store: their turns are said
in one session, the observer's rule-based extractor distils them when the session ends, and
curation writes the proposals (no model needed). The report counts anchors by type and edges by
relation (open and closed) over every store, with examples of each.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Callable

from ..db import rows
from ..settings import defaults
from . import extractor_eval

REPLY = "I see."


def speaker_turns(sample: dict) -> dict[str, list[str]]:
    """Each speaker's turns, in order."""
    turns, _, _ = extractor_eval.turns_and_gold(sample)
    out: dict[str, list[str]] = {}
    for _, speaker, text in turns:
        if text.strip():
            out.setdefault(speaker, []).append(text)
    return out


def say(engine, turns: list[str]) -> None:
    """Say the turns in one session, end it, distil it once and curate everything queued."""
    session = engine.open_session("personal", "graph")
    for text in turns:
        engine.add_turn(session, user=text[:8000], assistant=REPLY)
    engine.end_session(session)
    engine.writepath.observer.distill(session, engine.now(), "end")
    engine.writepath.curation.drain()


def graph_of(engine) -> tuple[list[dict], list[dict]]:
    """(anchors, edges) of a store, edges with their ends' names and whether they are still open."""
    with engine.db.snapshot() as conn:
        anchors = rows(conn, "SELECT canonical_name AS name, anchor_type AS type FROM memory_anchors")
        edges = rows(conn, "SELECT s.canonical_name AS source, e.relation, t.canonical_name AS target,"
                           " t.anchor_type AS target_type, e.valid_to IS NULL AS open FROM memory_edges e"
                           " JOIN memory_anchors s ON s.anchor_id = e.from_anchor_id"
                           " JOIN memory_anchors t ON t.anchor_id = e.to_anchor_id ORDER BY e.valid_from")
    return anchors, edges


def report(samples: list[dict], *, open_engine: Callable, examples: int = 20,
           progress: Callable[[str], None] | None = None) -> dict:
    """Anchors by type, edges by relation, and examples of each, over every speaker's store."""
    anchors: list[dict] = []
    edges: list[dict] = []
    stores = 0
    with tempfile.TemporaryDirectory(prefix="keepmind-graph-") as tmp:
        for sample in samples:
            for speaker, turns in speaker_turns(sample).items():
                home = Path(tmp) / f"{sample.get('sample_id', stores)}-{stores}"
                settings = defaults().with_overrides(memory__embeddings__enabled=False,
                                                     memory__embeddings__auto_download=False)
                engine = open_engine(home, settings=settings, start_workers=False)
                try:
                    say(engine, turns)
                    found_anchors, found_edges = graph_of(engine)
                finally:
                    engine.close()
                stores += 1
                anchors += [{**a, "store": f"{sample.get('sample_id')}/{speaker}"} for a in found_anchors]
                edges += [{**e, "open": bool(e["open"]), "store": f"{sample.get('sample_id')}/{speaker}"}
                          for e in found_edges]
                if progress:
                    progress(f"{sample.get('sample_id')}/{speaker}: {len(found_anchors)} anchors, "
                             f"{len(found_edges)} edges")
    named = [a for a in anchors if a["type"] in ENTITY_TYPES]
    return {
        "stores": stores,
        "anchors": len(anchors),
        "anchors_by_type": dict(Counter(a["type"] for a in anchors).most_common()),
        "entity_anchors_by_type": dict(Counter(a["type"] for a in named).most_common()),
        "edges": len(edges),
        "edges_by_relation": dict(Counter(e["relation"] for e in edges).most_common()),
        "closed_edges": sum(1 for e in edges if not e["open"]),
        "anchor_examples": _spread(named, "type", examples),
        "edge_examples": _spread(edges, "relation", examples),
    }


ENTITY_TYPES = ("person", "place", "organisation", "membership", "pet")


def _spread(items: list[dict], key: str, n: int) -> list[dict]:
    """Up to n items, taking in turn from each value of `key` so every kind is shown."""
    groups: dict[str, list[dict]] = {}
    for item in items:
        groups.setdefault(item[key], []).append(item)
    out: list[dict] = []
    while len(out) < n and any(groups.values()):
        for value in list(groups):
            if groups[value] and len(out) < n:
                out.append(groups[value].pop(0))
    return out
