"""Audience and boundary: who may read and write which memories.

The read rule lives here once, as SQL that every read path puts inside its candidate query
(find, get, FTS, vector hydration, UI listing) — never as a filter applied after a LIMIT.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from .errors import InvalidInput, ScopeError

AUDIENCES = ("personal", "team", "public")
ANY_BOUNDARY = "*"  # in a token's boundaries: every boundary; never a boundary's own name
RESERVED_BOUNDARIES = frozenset({ANY_BOUNDARY})
MAX_NAME_CHARS = 200
# Invisible characters that make two names look alike or break a line: controls, format
# characters (bidi overrides, zero-width spaces), surrogates and line/paragraph separators.
# Zero-width (non-)joiners stay: emoji and some scripts need them.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_JOINERS = frozenset({"\u200c", "\u200d"})
# Wider audiences may read the narrower-shared tiers below them; public reads nothing.
READABLE = {
    "personal": ("personal", "team"),
    "team": ("team",),
    "public": (),
}
# How private each audience is; a write may narrow (go up) but never widen (go down).
PRIVACY_RANK = {"public": 0, "team": 1, "personal": 2}
MEMORY_CLASSES = ("durable_fact", "evidence", "trace")


def check_name(value: object, what: str = "boundary", *, reserved=RESERVED_BOUNDARIES) -> str:
    """A scope name (a boundary, a token's boundary, a session's channel), stripped and in NFC, or
    InvalidInput: non-empty, at most 200 characters, no control or invisible characters, and
    not a reserved name (`*` is the token wildcard "every boundary", never a boundary's own).

    The one check every boundary passes where it enters: sessions, tokens, drafts and imports,
    and settings.
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"a {what} is required: a non-empty workspace or channel name")
    # NFC: "Café" typed and "Café" from a macOS folder name (e + combining accent) are one name
    name = unicodedata.normalize("NFC", value.strip())
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInput(f"a {what} is at most {MAX_NAME_CHARS} characters; this one has {len(name)}")
    for position, ch in enumerate(name, 1):
        if unicodedata.category(ch) in _HIDDEN_CATEGORIES and ch not in _JOINERS:
            raise InvalidInput(f"the {what} holds a control or invisible character (U+{ord(ch):04X} at "
                               f"position {position}): use visible letters, digits, spaces and punctuation")
    if name in reserved:
        raise InvalidInput(f"{name!r} is reserved (a token's wildcard for every boundary): name the {what}, "
                           "e.g. work")
    return name


def check_boundaries(values, what: str = "boundary") -> tuple[str, ...]:
    return tuple(check_name(v, what) for v in values)


@dataclass(frozen=True)
class Scope:
    """The audience and boundary a read or write acts under (a session's scope)."""

    audience: str
    boundary: str
    session_id: str | None = None
    # Extra boundaries this scope may read, granted by an explicit settings policy entry.
    extra_boundaries: tuple[str, ...] = field(default=())
    # Boundaries the settings grant this session but the token acting through it may not see:
    # reads stay inside the token's boundaries, and recall (which reads with the whole policy)
    # refuses rather than answer with part of it.
    withheld_boundaries: tuple[str, ...] = field(default=())
    # A viewer over every boundary (the UI acting with an any-boundary token); never a session.
    any_boundary: bool = False

    def __post_init__(self):
        if self.audience not in AUDIENCES:
            raise InvalidInput(
                f"unknown audience {self.audience!r}: use one of {', '.join(AUDIENCES)}"
            )
        # Names are checked where they enter (check_name); a Scope is also built from stored rows,
        # which must stay readable whatever an older version let in.
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

    @classmethod
    def viewer(cls, audience: str, boundaries: tuple[str, ...] | None) -> "Scope":
        """What a person sees acting with a token: its ceiling's readable tiers in its boundaries
        (every boundary when `boundaries` is None). Never a session, never a write scope."""
        if not boundaries:
            return cls(audience, ANY_BOUNDARY, any_boundary=True)
        return cls(audience, boundaries[0], extra_boundaries=tuple(boundaries[1:]))


def granted_boundaries(policy: dict, boundary: str) -> tuple[str, ...]:
    """The other boundaries a session in `boundary` may read (settings' policy.cross_boundary_reads)."""
    return tuple(b for b in policy.get(boundary, ()) if b != boundary)


def session_scope(audience: str, boundary: str, session_id: str, policy: dict,
                  allows_boundary=None) -> Scope:
    """The scope a session reads with: the cross-boundary rule, computed in this one place.

    `allows_boundary` (a token's predicate) cuts the granted boundaries to the ones the caller
    may see; those cut off are kept as `withheld_boundaries`.
    """
    granted = granted_boundaries(policy, boundary)
    if allows_boundary is None:
        return Scope(audience, boundary, session_id, granted)
    kept = tuple(b for b in granted if allows_boundary(b))
    return Scope(audience, boundary, session_id, kept, tuple(b for b in granted if b not in kept))


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
    parts = [f"{alias}.audience IN ({','.join('?' * len(auds))})"]
    params: list = [*auds]
    if not scope.any_boundary:
        parts.append(f"{alias}.boundary IN ({','.join('?' * len(bounds))})")
        params.extend(bounds)
    parts += [f"{alias}.author_audience != 'public'", f"{alias}.sensitivity != 'secret'"]
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


def permitted_sql(alias: str, ceiling: str, boundaries: tuple[str, ...] | None) -> tuple[str, list]:
    """True for rows (sessions, checkpoints, tombstones) a caller with this audience ceiling and
    these boundaries (None: any) may act on: the token rule of the API, as SQL."""
    auds = [a for a in AUDIENCES if PRIVACY_RANK[a] <= PRIVACY_RANK[ceiling]]
    sql = f"{alias}.audience IN ({','.join('?' * len(auds))})"
    params: list = list(auds)
    if boundaries is not None:
        sql += f" AND {alias}.boundary IN ({','.join('?' * len(boundaries))})"
        params.extend(boundaries)
    return sql, params
