"""The secret filter: detect credentials, and the one rule for what reaches the database.

Memory text (a store, an update, a supersede, curation's merge, an import) that holds a secret is
refused: `refuse_secrets` raises SecretBlocked naming the kinds, never the value, and the verbs
turn that into a "blocked" result with an audit event. Everything else a caller sends that is
persisted (turns, session titles and channels, tool lists, recall receipts) is redacted first:
the value is replaced by a marker. The patterns start from netclaw-facts §4
(JSON and key=value credentials, Bearer headers, connection-string passwords, sk-/xox/ghp_ tokens,
AWS key ids, JWTs, PEM private keys) and add other providers' token shapes, URL credentials and
card numbers (Luhn-checked, with a known issuer prefix, so phone numbers and ids pass).
Deliberately no generic "high entropy" rule: commit hashes, UUIDs and checksums are ordinary
content people want remembered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import SecretBlocked

MARKER = "[secret removed]"

# Provider token shapes: (kind, pattern). Each match is a secret in full.
_TOKEN_PATTERNS: list[tuple[str, str]] = [
    ("aws_access_key_id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),  # may end in - or _
    ("github_token", r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
    ("github_token", r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}\b"),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{8,}"),
    ("slack_webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"),
    ("openai_style_key", r"\bsk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-)?[A-Za-z0-9_\-]{20,}"),
    ("stripe_key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b"),
    ("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b"),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{20,}"),
    ("twilio_key", r"\bSK[0-9a-f]{32}\b"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # Written with {5} so this source file never contains a literal key header.
    ("pem_private_key",
     r"-{5}BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-{5}[\s\S]*?(?:-{5}END (?:[A-Z0-9]+ )*PRIVATE KEY"
     r"(?: BLOCK)?-{5}|\Z)"),
    ("auth_header", r"(?i)\b(?:authorization\s*[:=]\s*)?(?:bearer|basic|token)\s+[A-Za-z0-9_\-.=+/]{16,}"),
    ("url_credentials", r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:@/]*:[^\s@/]{3,}@[^\s]+"),
]

# Keys whose value is a credential, in JSON ("key": "value"), env (KEY=value) or YAML (key: value).
_SECRET_KEY = (
    r"(?:api[_\-\s]?key|apikey|access[_\-\s]?key|secret[_\-\s]?key|secret|client[_\-\s]?secret|"
    r"auth[_\-\s]?token|access[_\-\s]?token|refresh[_\-\s]?token|bearer[_\-\s]?token|token|"
    r"passw(?:or)?d|passphrase|pwd|pass|authorization|signing[_\-\s]?key|private[_\-\s]?key|"
    r"connection[_\-\s]?string|credentials?|account[_\-\s]?key|shared[_\-\s]?access[_\-\s]?key|"
    r"webhook[_\-\s]?secret|session[_\-\s]?secret)"
)
_KEY_VALUE = re.compile(
    r"""(?ix)
    (?<![\w.\-])(?P<key>["']?(?:[\w.\-]*[_.\-])?""" + _SECRET_KEY + r"""["']?)  # KEY, DB_PASSWORD
    \s*(?::|=|=>)\s*
    (?P<q>["']?)(?P<value>(?<=["'])[^"'\n]{4,}(?=["'])|[^\s"',;}{]{4,})
    """
)
_SAID_PASSWORD = re.compile(
    r"(?i)\b(?:password|passcode|passphrase|pin code|api key|secret key)\s+(?:is|was|=)\s+"
    r"[\"'`]?(?P<value>[^\s\"'`]{4,})"
)
_PLACEHOLDERS = {
    "none", "null", "true", "false", "redacted", "example", "changeme?", "xxxx", "****", "<redacted>",
    "your_api_key", "your-api-key", "placeholder", "required", "optional", "string", "hidden",
}
# A card number stands alone: digits inside a letters-and-digits token (a UUID, a commit hash, a
# session id like ses-<32 hex>) are never one, or a random id would block a whole session's memories.
_CARD = re.compile(r"(?<![0-9A-Za-z\-])(?:\d{13,19}|\d{4}(?:[ \-]\d{4}){2}[ \-]\d{1,7}|\d{4}[ \-]\d{6}[ \-]\d{5})"
                   r"(?![0-9A-Za-z\-])")
_COMPILED = [(kind, re.compile(p)) for kind, p in _TOKEN_PATTERNS]
# What every pattern above needs somewhere in the text: a provider prefix, "://", eight digits in
# a row (a card), or the start of a credential word. Most text has none of them, and one search
# for these is several times cheaper than running every pattern (memory writes and bulk imports
# all pass through here). A pattern added above must keep its trigger here.
_MAYBE = re.compile(
    r"AKIA|ASIA|ABIA|ACCA|AIza|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|sk-|_live_|_test_|hf_|npm_|SG\.|SK[0-9a-f]"
    r"|eyJ|-----BEGIN|://|\d{4}[ \-]?\d{4}"
    r"|(?i:(?<![a-z0-9])(?:bearer|basic|token|api|access|secret|auth|pass|pwd|signing|private|connection"
    r"|credential|account|pin))")


@dataclass(frozen=True)
class SecretHit:
    kind: str
    start: int
    end: int


def _is_placeholder(value: str) -> bool:
    v = value.strip().strip("\"'`").lower()
    if v in _PLACEHOLDERS or v.startswith(("<", "${", "{{", "$(")) or set(v) <= set("*x.-_#"):
        return True
    return v == MARKER.lower() or "secret removed" in v


def _value_looks_secret(key: str, value: str) -> bool:
    """A value under a credential key: long enough and not a placeholder or a plain count."""
    if _is_placeholder(value):
        return False
    key_l = key.lower()
    password_like = any(w in key_l for w in ("pass", "pwd", "secret", "credential"))
    if value.isdigit():
        return password_like and len(value) >= 4
    if password_like:
        return len(value) >= 4
    # token / api key / connection string: something long with letters and digits or symbols,
    # or a long random run of mixed-case letters (keys without a digit exist)
    return len(value) >= 8 and (not value.isalpha() or _random_letters(value))


def _random_letters(value: str) -> bool:
    """A long run of letters in mixed case, like a key that happens to hold no digit (a word or a
    CamelCase name has few capitals)."""
    upper = sum(c.isupper() for c in value)
    return len(value) >= 20 and upper >= 4 and len(value) - upper >= 4


def luhn_valid(digits: str) -> bool:
    total, double = 0, False
    for ch in reversed(digits):
        d = int(ch)
        if double:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
        double = not double
    return total % 10 == 0


def _card_issuer(digits: str) -> bool:
    n = len(digits)
    two, four = int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16
    if two in (34, 37):
        return n == 15
    if digits.startswith("6011") or two == 65 or 644 <= int(digits[:3]) <= 649:
        return n in (16, 19)
    if 3528 <= four <= 3589:
        return n in (16, 19)
    if two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305:
        return n in (14, 16, 19)
    return False


def find_secrets(text: str) -> list[SecretHit]:
    """Every secret-like span in `text` (possibly overlapping), in order of appearance."""
    if not text or not _MAYBE.search(text):
        return []
    hits: list[SecretHit] = []
    for kind, pattern in _COMPILED:
        for m in pattern.finditer(text):
            if kind == "auth_header":
                value = m.group(0).split()[-1]
                # prose like "Basic internationalization" is not a credential: tokens have digits
                # (or are long runs of mixed-case letters)
                if _is_placeholder(value) or not (any(c.isdigit() for c in value) or _random_letters(value)):
                    continue
            if kind == "url_credentials":
                password = m.group(0).split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
                if _is_placeholder(password):
                    continue
            hits.append(SecretHit(kind, m.start(), m.end()))
    for m in _KEY_VALUE.finditer(text):
        if _value_looks_secret(m.group("key"), m.group("value")):
            hits.append(SecretHit("credential_assignment", m.start("value"), m.end("value")))
    for m in _SAID_PASSWORD.finditer(text):
        if not _is_placeholder(m.group("value")):
            hits.append(SecretHit("stated_password", m.start("value"), m.end("value")))
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _card_issuer(digits) and luhn_valid(digits):
            hits.append(SecretHit("card_number", m.start(), m.end()))
    hits.sort(key=lambda h: (h.start, -h.end))
    return hits


def contains_secret(text: str) -> bool:
    return bool(find_secrets(text))


def secret_kinds(text: str) -> list[str]:
    """The distinct kinds of secret found (for audit events: the kind, never the value)."""
    out: list[str] = []
    for hit in find_secrets(text):
        if hit.kind not in out:
            out.append(hit.kind)
    return out


def redact(text: str) -> tuple[str, list[str]]:
    """`text` with every secret span replaced by MARKER, and the kinds found."""
    hits = find_secrets(text)
    if not hits:
        return text, []
    spans: list[list[int]] = []
    for hit in hits:  # merge overlapping spans
        if spans and hit.start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], hit.end)
        else:
            spans.append([hit.start, hit.end])
    out, pos = [], 0
    for start, end in spans:
        out.append(text[pos:start])
        out.append(MARKER)
        pos = end
    out.append(text[pos:])
    kinds: list[str] = []
    for hit in hits:
        if hit.kind not in kinds:
            kinds.append(hit.kind)
    return "".join(out), kinds


def redact_value(value):
    """Redact every string inside a JSON-like value; returns (value, kinds)."""
    kinds: list[str] = []

    def walk(v):
        if isinstance(v, str):
            clean, found = redact(v)
            kinds.extend(k for k in found if k not in kinds)
            return clean
        if isinstance(v, dict):
            return {walk(k) if isinstance(k, str) else k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    return walk(value), kinds


def redact_text(text):
    """`text` with every secret value replaced by the marker (anything not a string passes)."""
    if not isinstance(text, str) or not text:
        return text
    return redact(text)[0]


def redact_strings(values):
    """A list of strings with each one redacted (None and other values pass unchanged)."""
    if not isinstance(values, (list, tuple)):
        return values
    return [redact_text(v) for v in values]


def blocked_reason(kinds) -> str:
    """What a blocked result says: the kinds found, never the value."""
    return "secret-like content is never stored (" + ", ".join(kinds) + ")"


def refuse_secrets(what: str, *texts) -> None:
    """The rule for memory text: raise SecretBlocked when any of `texts` holds a secret.

    Applied where memory text reaches its tables (store.insert_memory, revise_document,
    supersede_record) and to every imported row, so no path can store what store_memory blocks.
    """
    kinds: list[str] = []
    for text in texts:
        if isinstance(text, str) and text:
            kinds.extend(k for k in secret_kinds(text) if k not in kinds)
    if kinds:
        raise SecretBlocked(f"{what} holds secret-like content ({', '.join(kinds)}): Keepmind never stores "
                            "credentials; remove the value and send the rest", tuple(kinds))
