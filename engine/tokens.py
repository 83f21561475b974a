"""API tokens: who may call the localhost API, and how far each caller may see.

A token has a name, an audience ceiling and a list of allowed boundaries ("*" = any). Only the
SHA-256 of the secret is stored: secrets are 256 random bits, so a fast hash is enough, and the
secret is shown once, when it is created. A team-ceiling token can open team and public
sessions only; it can never open, or act through, a personal session.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass

import apsw

from .db import one, rows, scalar
from .errors import InvalidInput, NotFound, ScopeError
from .memory import new_id
from .policy import ANY_BOUNDARY, AUDIENCES, PRIVACY_RANK, check_name

SECRET_PREFIX = "km_"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._@:-]{0,63}$")
ID_LIKE = re.compile(r"(?i)^tok-")
MAX_BOUNDARIES = 100


@dataclass(frozen=True)
class Token:
    """A stored token (never its secret)."""

    id: str
    name: str
    audience_ceiling: str
    boundaries: tuple[str, ...]
    created_at: int
    last_used_at: int | None = None
    revoked_at: int | None = None

    @property
    def any_boundary(self) -> bool:
        return ANY_BOUNDARY in self.boundaries

    def allows_audience(self, audience: str) -> bool:
        return audience in PRIVACY_RANK and PRIVACY_RANK[audience] <= PRIVACY_RANK[self.audience_ceiling]

    def allows_boundary(self, boundary: str) -> bool:
        return self.any_boundary or boundary in self.boundaries

    def permits(self, audience: str, boundary: str) -> bool:
        """May this token act in a session of this audience and boundary?"""
        return self.allows_audience(audience) and self.allows_boundary(boundary)

    def covers(self, other: "Token") -> bool:
        """True when `other` is no wider than this token (ceiling and boundaries)."""
        if not self.allows_audience(other.audience_ceiling):
            return False
        if self.any_boundary:
            return True
        return not other.any_boundary and all(b in self.boundaries for b in other.boundaries)

    def as_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "audience_ceiling": self.audience_ceiling,
                "boundaries": list(self.boundaries), "created_at": self.created_at,
                "last_used_at": self.last_used_at, "revoked": self.revoked_at is not None}


@dataclass(frozen=True)
class CreatedToken:
    """A new token and its secret: the only moment the secret exists outside the caller."""

    token: Token
    secret: str


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def check_spec(name: object, audience_ceiling: object, boundaries: object) -> tuple[str, str, tuple[str, ...]]:
    """Validate a token's name, ceiling and boundaries; return them normalized."""
    if not isinstance(name, str) or not NAME_RE.match(name.strip()):
        raise InvalidInput("a token name is 1-64 letters, digits, spaces or ._@:- and starts with a "
                           "letter or digit, e.g. claude-code")
    if ID_LIKE.match(name.strip()):  # `token revoke tok-…` must never reach another token by its name
        raise InvalidInput(f"{name.strip()!r} looks like a token id (tok-…): pick a name, e.g. claude-code")
    if audience_ceiling not in AUDIENCES:
        raise InvalidInput(f"unknown audience ceiling {audience_ceiling!r}: use one of {', '.join(AUDIENCES)}")
    if boundaries is None:
        boundaries = ["*"]
    if isinstance(boundaries, str):
        boundaries = [b for b in boundaries.split(",")]
    if not isinstance(boundaries, (list, tuple)) or not all(isinstance(b, str) for b in boundaries):
        raise InvalidInput('boundaries must be a list of boundary names, or ["*"] for any boundary')
    cleaned: list[str] = []
    for b in boundaries:
        b = b.strip()
        if b and b != ANY_BOUNDARY:
            b = check_name(b, "token's boundary")
        if b and b not in cleaned:
            cleaned.append(b)
    if not cleaned:
        raise InvalidInput('boundaries is empty: name at least one boundary, or ["*"] for any')
    if ANY_BOUNDARY in cleaned and len(cleaned) > 1:
        raise InvalidInput('"*" means every boundary: give it alone, or name the boundaries without it')
    if len(cleaned) > MAX_BOUNDARIES:
        raise InvalidInput(f"at most {MAX_BOUNDARIES} boundaries per token")
    return name.strip(), audience_ceiling, tuple(cleaned)


def _token(row: dict) -> Token:
    return Token(row["token_id"], row["name"], row["audience_ceiling"],
                 tuple(json.loads(row["boundaries_json"] or '["*"]')), row["created_at"],
                 row["last_used_at"], row["revoked_at"])


def create(conn: apsw.Connection, name: str, audience_ceiling: str, boundaries, now: int) -> CreatedToken:
    """Create a token; the returned secret is never stored and cannot be shown again."""
    name, audience_ceiling, bounds = check_spec(name, audience_ceiling, boundaries)
    if one(conn, "SELECT 1 AS x FROM api_tokens WHERE name=? AND revoked_at IS NULL", (name,)):
        raise InvalidInput(f"a live token is named {name!r} already: pick another name or revoke it first")
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    token_id = new_id("tok")
    conn.execute(
        "INSERT INTO api_tokens(token_id, name, token_hash, audience_ceiling, boundaries_json, created_at)"
        " VALUES (?,?,?,?,?,?)",
        (token_id, name, hash_secret(secret), audience_ceiling, json.dumps(list(bounds)), now),
    )
    return CreatedToken(Token(token_id, name, audience_ceiling, bounds, now), secret)


def verify(conn: apsw.Connection, secret: object) -> Token | None:
    """The live token for this secret, or None. The stored hash is compared in constant time."""
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX) or len(secret) > 200:
        return None
    digest = hash_secret(secret)
    row = one(conn, "SELECT * FROM api_tokens WHERE token_hash=?", (digest,))
    if row is None or not hmac.compare_digest(row["token_hash"], digest) or row["revoked_at"] is not None:
        return None
    return _token(row)


def get(conn: apsw.Connection, token_id_or_name: str) -> Token:
    """A token by id, else by name: the live token of that name, else the last one revoked."""
    row = one(conn, "SELECT * FROM api_tokens WHERE token_id=?", (token_id_or_name,)) or one(
        conn, "SELECT * FROM api_tokens WHERE name=? ORDER BY revoked_at IS NOT NULL, revoked_at DESC,"
        " created_at DESC, rowid DESC LIMIT 1", (token_id_or_name,))
    if row is None:
        raise NotFound(f"no token {token_id_or_name!r}: `keepmind token list` shows the tokens")
    return _token(row)


def list_tokens(conn: apsw.Connection, *, include_revoked: bool = False) -> list[Token]:
    sql = "SELECT * FROM api_tokens" + ("" if include_revoked else " WHERE revoked_at IS NULL")
    return [_token(r) for r in rows(conn, sql + " ORDER BY created_at, name")]


def revoke(conn: apsw.Connection, token_id_or_name: str, now: int, *, by: Token | None = None) -> Token:
    """Revoke a token (kept, never deleted, so its sessions stay attributable). The sessions it
    opened end with it: nothing can speak in them any more, and ending them lets the observer
    distil what was said (a revoked agent's session left open stayed "open" in the UI for good)."""
    if by is not None:
        # one answer whether it is missing or wider than `by`: a narrow token learns no other's id
        try:
            token = get(conn, token_id_or_name)
        except NotFound:
            token = None
        if token is None or not by.covers(token):
            raise NotFound(f"no token {token_id_or_name!r} that this token may revoke (it may revoke only tokens "
                           "no wider than itself)")
    token = get(conn, token_id_or_name)
    if token.revoked_at is None:
        conn.execute("UPDATE api_tokens SET revoked_at=? WHERE token_id=?", (now, token.id))
        conn.execute("UPDATE sessions SET status='ended', ended_at=?, updated_at=? WHERE token_id=?"
                     " AND status != 'ended'", (now, now, token.id))
    return get(conn, token.id)


def sessions_ended_with(conn: apsw.Connection, token: Token) -> int:
    """How many of a revoked token's sessions its revocation ended (they end at its moment)."""
    if token.revoked_at is None:
        return 0
    return scalar(conn, "SELECT COUNT(*) FROM sessions WHERE token_id=? AND ended_at=?",
                  (token.id, token.revoked_at)) or 0


def create_unique(conn: apsw.Connection, name: str, audience_ceiling: str, boundaries, now: int) -> CreatedToken:
    """Create a token named `name`, or `name-2`, `name-3`... when that name is taken."""
    candidate, n = name, 1
    while one(conn, "SELECT 1 AS x FROM api_tokens WHERE name=? AND revoked_at IS NULL", (candidate,)):
        n += 1
        candidate = f"{name}-{n}"
    return create(conn, candidate, audience_ceiling, boundaries, now)


def require_permits(token: Token, audience: str, boundary: str) -> None:
    """ScopeError unless `token` may act in a session of this audience and boundary."""
    if not token.allows_audience(audience):
        raise ScopeError(f"this token's audience ceiling is {token.audience_ceiling}: it cannot act in a "
                         f"{audience} session; use a token whose ceiling allows {audience}")
    if not token.allows_boundary(boundary):
        raise ScopeError(f"this token may not act in boundary {boundary!r}: it is limited to "
                         f"{', '.join(token.boundaries)}")


def touch(conn: apsw.Connection, token_id: str, now: int) -> None:
    conn.execute("UPDATE api_tokens SET last_used_at=? WHERE token_id=?", (now, token_id))


def count_live(conn: apsw.Connection) -> int:
    row = one(conn, "SELECT COUNT(*) AS n FROM api_tokens WHERE revoked_at IS NULL")
    return row["n"] if row else 0
