"""Audience and boundary: who may read and write which memories.

The read rule lives here once, as SQL that every read path puts inside its candidate query
(find, get, FTS, vector hydration, UI listing) — never as a filter applied after a LIMIT.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import InvalidInput, ScopeError

AUDIENCES = ("personal", "team", "public")
# Wider audiences may read the narrower-shared tiers below them; public reads nothing.
READABLE = {
    "personal": ("personal", "team"),
    "team": ("team",),
    "public": (),
}
# How private each audience is; a write may narrow (go up) but never widen (go down).
PRIVACY_RANK = {"public": 0, "team": 1, "personal": 2}
MEMORY_CLASSES = ("durable_fact", "evidence", "trace")


@dataclass(frozen=True)
class Scope:
    """The audience and boundary a read or write acts under (a session's scope)."""

    audience: str
    boundary: str
    session_id: str | None = None
    # Extra boundaries this scope may read, granted by an explicit settings policy entry.
    extra_boundaries: tuple[str, ...] = field(default=())

    def __post_init__(self):
        if self.audience not in AUDIENCES:
            raise InvalidInput(
                f"unknown audience {self.audience!r}: use one of {', '.join(AUDIENCES)}"
            )
        if not isinstance(self.boundary, str) or not self.boundary.strip():
            raise InvalidInput("a boundary is required: a non-empty workspace or channel name")

    @property
    def inert(self) -> bool:
        """Public sessions neither read nor write memory."""
        return self.audience == "public"

    @property
    def readable_audiences(self) -> tuple[str, ...]:
        return READABLE[self.audience]

    @property
    def readable_boundaries(self) -> tuple[str, ...]:
        return (self.boundary, *[b for b in self.extra_boundaries if b != self.boundary])


def check_readable(scope: Scope) -> None:
    if scope.inert:
        raise ScopeError("public sessions cannot read memory: open a personal or team session")


def write_scope(scope: Scope, audience: str | None = None) -> str:
    """The audience a write from `scope` lands in; narrowing is allowed, widening is refused."""
    if scope.inert:
        raise ScopeError("public sessions cannot write memory: open a personal or team session")
    if audience is None or audience == scope.audience:
        return scope.audience
    if audience not in AUDIENCES:
        raise InvalidInput(f"unknown audience {audience!r}: use one of {', '.join(AUDIENCES)}")
    if PRIVACY_RANK[audience] < PRIVACY_RANK[scope.audience]:
        raise ScopeError(
            f"a {scope.audience} session cannot write a {audience} memory: "
            "writes may narrow their audience, never widen it"
        )
    return audience


def visible_sql(
    alias: str,
    scope: Scope,
    now_ms: int,
    *,
    kind: str,
    include_expired: bool = False,
    include_trace: bool = False,
) -> tuple[str, list]:
    """SQL (and its parameters) that is true only for memories `scope` may see.

    `kind` is "document" or "record"; records must also be the head of their supersede chain
    and not a tombstone. The caller ANDs this into the WHERE clause of its candidate query.
    """
    if scope.inert:
        return "0", []
    auds = scope.readable_audiences
    bounds = scope.readable_boundaries
    parts = [
        f"{alias}.audience IN ({','.join('?' * len(auds))})",
        f"{alias}.boundary IN ({','.join('?' * len(bounds))})",
        f"{alias}.author_audience != 'public'",
        f"{alias}.sensitivity != 'secret'",
    ]
    params: list = [*auds, *bounds]
    if not include_expired:
        parts.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)")
        params.append(now_ms)
    if not include_trace:
        parts.append(f"{alias}.memory_class != 'trace'")
    if kind == "document":
        parts.append(f"{alias}.deleted_at IS NULL")
    elif kind == "record":
        parts.append(f"{alias}.is_tombstone = 0")
        parts.append(
            f"NOT EXISTS (SELECT 1 FROM memory_records s WHERE s.supersedes_record_id = {alias}.record_id)"
        )
    else:
        raise ValueError(kind)
    return " AND ".join(parts), params
