"""A memory a person writes by hand (the browser's Write a memory): stored at once, not queued, but
checked and linked as curation checks and links what an agent stores.

Before, it was only refused when it said a claim deleted as wrong word for word, and it fed no graph:
"I have a dog named Rolo, he is 3." came back after "I have a dog named Rolo." was deleted as wrong,
which `memories add` refuses, and "My brother Tom lives in Berlin." hung on no anchor and named no
one, where `memories add` gives Tom, the brother, living in Berlin.
"""

from __future__ import annotations

from ..policy import Scope
from ..store import Relation
from . import extractor, similarity
from .curation import store_relations


def deleted_claim(engine, scope: Scope, title: str, content: str) -> str | None:
    """The id of a memory deleted as wrong in the scope that `content` says again: whole, with more
    around it, or close in meaning (memory.curation.tombstone_cosine, with the local embedder), as
    curation refuses it (curation.plan). The word-for-word case is the store's own refusal."""
    if not isinstance(content, str) or not content.strip():
        return None
    with engine.db.snapshot() as conn:
        said = similarity.tombstone_said(conn, scope, content)
    if said is not None:
        return said
    embedded = similarity.embed_text(engine, title if isinstance(title, str) else "", content)
    with engine.db.snapshot() as conn:
        near = similarity.tombstone_near(engine, conn, scope, embedded, content)
    return near[0] if near is not None else None


def graph_of(content: str, anchor: str | None) -> tuple[str | None, str, tuple[Relation, ...]]:
    """(anchor name, anchor type, relations) for the memory: the anchor the person gave (a concept),
    else the person, place or organisation it is about, as intake.store_memory finds it; the ties
    it names about the user either way."""
    ties, about = extractor.ties_of(content)
    relations = store_relations(ties)
    if anchor:
        return anchor, "concept", relations
    return (about.name, about.kind, relations) if about else (None, "concept", relations)
