"""Profiles: durable facts that share a `*_profile` facet are injected together.

A person's standing facts for one domain (the travel profile: airline membership, home airport,
seat preference) are one unit for a task in that domain. The gate scores items one by one and was
fitted on questions that each ask for one fact, so for a task message ("I need a flight from
Boston to Chicago next Friday") it keeps the profile member closest to the message (the home
airport) and refuses the others, whose words are further from it (the airline membership: cosine
0.27 to that message, item score 0.004 against the 0.007 bar).

So when a kept item is a durable fact with a profile facet, the other visible durable facts
carrying the same facet join it, after every kept item and inside the same item and character
budgets, closest to the message first (by cosine where there is a query vector). They are read
from the store by facet, not taken from the candidates: a member is relevant because its profile
is, not because its words resemble the message, so neither a channel nor the floor has to find
it. Evidence never rides along: it is auto-recalled only when it clears the gate itself
(DESIGN.md). Nothing kept, nothing added. Members go through the same visibility predicate and
recall modes as every candidate, and what this session was already given is excluded.

A profile facet is one ending in `_profile` (netclaw's identity-profile facets: travel_profile,
personal_profile, household_profile, pet_profile); the observer's prompt asks the model for one on
a lasting fact about the user. The rule-based extractor cannot tell a statement's domain, so it
writes none, and its memories are never grouped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..memory import text_terms
from .rank import Candidate, Ranked

PROFILE_SUFFIX = "_profile"
GROUPED_CLASS = "durable_fact"
MEMBERS_READ = 20   # members read per profile facet; the item budget keeps at most a few


@dataclass(frozen=True)
class Companion:
    """A durable fact injected because a kept item shares its profile."""

    ranked: Ranked
    facet: str
    joined: str | None   # the id of the kept item whose profile it belongs to (None: the task needs it itself)
    why: str | None = None

    @property
    def id(self) -> str:
        return self.ranked.id

    @property
    def reason(self) -> str:
        return self.why or f"shares the {self.facet} profile with {self.joined}"


def profile_facets(row: dict) -> tuple[str, ...]:
    """The profile facets of a durable fact (none for other classes)."""
    if row.get("memory_class") != GROUPED_CLASS:
        return ()
    facets = row.get("facets") or ""
    values = text_terms(facets) if isinstance(facets, str) else list(facets)
    return tuple(f.strip().lower() for f in values if f.strip().lower().endswith(PROFILE_SUFFIX))


def companions(kept: list[Ranked], members: Callable[[str], list[dict]],
               cosine: Callable[[str], float | None], ranked: list[Ranked] = ()) -> list[Companion]:
    """The members of the kept items' profiles, closest first within each profile.

    `members(facet)` reads the visible durable facts carrying the facet (newest first);
    `cosine(id)` is a member's cosine to the message, or None (no query vector, no vector yet);
    `ranked` is this recall's ranking: a member found there keeps its score, and without cosines
    members it ranked come first, in its order, then the rest newest first.
    """
    owner: dict[str, str] = {}
    for r in kept:
        for facet in profile_facets(r.candidate.row):
            owner.setdefault(facet, r.id)
    taken = {r.id for r in kept}
    by_id = {r.id: r for r in ranked}
    position = {r.id: n for n, r in enumerate(ranked)}
    out: list[Companion] = []
    for facet, joined in owner.items():
        found = []
        for n, row in enumerate(members(facet)):
            if row["id"] not in taken and row.get("memory_class") == GROUPED_CLASS:
                found.append((cosine(row["id"]), position.get(row["id"], len(position)), n, row))
        found.sort(key=lambda t: (t[0] is None, -(t[0] or 0.0), t[1], t[2]))
        for cos, _, _, row in found:
            taken.add(row["id"])
            out.append(Companion(joined_ranked(row, cos, by_id, f"profile:{facet}"), facet, joined))
    return out


def joined_ranked(row: dict, cosine: float | None, by_id: dict[str, Ranked], reason: str) -> Ranked:
    """A memory joining the kept items as this recall ranked it (its score kept), or, when the
    ranking did not reach it, at its cosine; with `reason` added to its reasons."""
    base = by_id.get(row["id"]) or Ranked(Candidate(row["id"], row, cosine, 0.0), cosine or 0.0, ())
    return Ranked(base.candidate, base.score, (*base.reasons, reason))
