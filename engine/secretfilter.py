"""The secret filter: detect credentials, and the one rule for what reaches the database.

Memory text (a store, an update, a supersede, curation's merge, an import) that holds a secret is
refused: `refuse_secrets` raises SecretBlocked naming the kinds, never the value, and the verbs
turn that into a "blocked" result with an audit event. Everything else a caller sends that is
persisted (turns, session titles and channels, tool lists, recall receipts) is redacted first:
the value is replaced by a marker. The patterns start from netclaw-facts §4
(JSON and key=value credentials, Bearer headers, connection-string passwords, sk-/xox/ghp_ tokens,
AWS key ids, JWTs, PEM private keys) and add other providers' token shapes, URL credentials and
card numbers (Luhn-checked, with a known issuer prefix, so phone numbers and ids pass), a bare
AWS secret access key, passwords on a command line (curl -u user:X, mysql -pX, sshpass -p X), and
credentials said in plain words: "my ssh password for the server is X", "PIN: X", "the api
token is X", "X is my wifi password", a password of several or hyphenated words ("my laptop
password is purple monkey dishwasher", see _said_phrase), a login said as user and password ("my
Netflix login is bob@example.com / X", see _LOGIN), backup codes, a security answer, a seed phrase
(see _STATED). Deliberately no generic "high entropy" rule: commit hashes, UUIDs and
checksums are ordinary content people want remembered, and so is code that names a credential
(`token = make_token(user, ttl)`, `user.password = hashed`: see _names_a_variable).
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
    ("sentry_token", r"\bsntry[su]_[A-Za-z0-9_+/=]{40,}"),
    ("pypi_token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    ("digitalocean_token", r"\bdo[por]_v1_[a-f0-9]{64}\b"),
    ("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    ("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    ("linear_api_key", r"\blin_api_[A-Za-z0-9]{40}\b"),
    ("groq_api_key", r"\bgsk_[A-Za-z0-9]{52}\b"),
    ("replicate_token", r"\br8_[A-Za-z0-9]{37}\b"),
    ("notion_token", r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b"),
    ("atlassian_token", r"\bATATT3[A-Za-z0-9_\-=]{150,}"),
    ("telegram_bot_token", r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_\-]{33}(?![\w\-])"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # Written with {5} so this source file never contains a literal key header.
    ("pem_private_key",
     r"-{5}BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-{5}[\s\S]*?(?:-{5}END (?:[A-Z0-9]+ )*PRIVATE KEY"
     r"(?: BLOCK)?-{5}|\Z)"),
    ("auth_header", r"(?i)\b(?:authorization\s*[:=]\s*)?(?:bearer|basic|token)\s+[A-Za-z0-9_\-.=+/]{16,}"),
    ("url_credentials", r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s:@/]*:[^\s@/]{3,}@[^\s]+"),
]

# Keys whose value is a credential, in JSON ("key": "value"), env (KEY=value) or YAML (key: value).
# The long words may be glued to a prefix (PGPASSWORD, adminPassword, csrftoken); the short
# pass/pwd need a separator before them (DB_PASS, db-pwd), or compass, bypass and
# passport would be keys.
_GLUED_KEY = r"(?:passw(?:or)?d|passphrase|secret|token|api[_\-]?key|credentials?)"
_SECRET_KEY = (
    r"(?:api[_\-\s]?key|apikey|access[_\-\s]?key|secret[_\-\s]?key|secret|client[_\-\s]?secret|"
    r"auth[_\-\s]?token|access[_\-\s]?token|refresh[_\-\s]?token|bearer[_\-\s]?token|token|"
    r"passw(?:or)?d|passphrase|pwd|pass|authorization|signing[_\-\s]?key|private[_\-\s]?key|"
    r"connection[_\-\s]?string|credentials?|account[_\-\s]?key|shared[_\-\s]?access[_\-\s]?key|"
    r"webhook[_\-\s]?secret|session[_\-\s]?secret)"
)
# The key and its value may be quoted, and the quotes escaped, as in JSON held inside a string (a
# tool's output logged as text: {\"password\": \"...\"}). A double-quoted value runs to the first
# quote that is not escaped ("p4ss\"word" is one value; its end was taken for the first \" and
# the rest of the password stayed) and may hold an apostrophe ("it's-a-secret").
_KEY_VALUE = re.compile(
    r"""(?ix)
    (?<![\w.\-])(?P<key>\\?["']?(?:[\w.\-]*""" + _GLUED_KEY + r"""|(?:[\w.\-]*[_.\-])?""" + _SECRET_KEY
    + r""")\\?["']?)
    (?P<sep>\s*(?::|=|=>)\s*)
    (?P<q>\\?["']?)(?P<value>
       (?<=\\["'])[^"'\\\n]{4,}(?=\\["'])
      |(?<!\\")(?<=")(?:[^"\\\n]|\\.){4,}(?=")
      |(?<!\\')(?<=')[^'\n]{4,}(?=')
      |[^\s"',;}{]{4,})
    """
)
# A password on a command line: curl/wget -u user:password (--user), mysql -pPASSWORD (glued: a
# separate word after -p is the database name, the password is asked for), sshpass -p PASSWORD.
# Only the password is the value; the user name stays.
_COMMAND_PASSWORD = re.compile(
    r"""(?x)
    \b(?:(?i:curl|wget)\b[^\n]*?[ \t](?:-u[ \t]*|--user(?:[ \t]+|=))["']?[^\s:"'@]+:(?P<user>[^\s"']+)
     |(?i:mysql\w*|mariadb\w*)\b[^\n]*?[ \t]-p(?P<mysql>'[^'\n]+'|"[^"\n]+"|[^\s'"]+)
     |(?i:sshpass)\b[^\n]*?[ \t]-p[ \t]*(?P<sshpass>'[^'\n]+'|"[^"\n]+"|[^\s'"]+))
    """
)
# Credentials said in words. A credential noun, then an optional short qualifier ("for the
# server"), then "is"/"was"/":"/"=" (or nothing: "and password X", "the passphrase 'X'") and the
# value. The value decides, because the same words make ordinary prose ("my password is too
# short", "the access token is refreshed every hour"): a quoted value counts, an unquoted one only
# when it is shaped like a credential (see _said_password, _said_token, _said_pin). The price: a
# password that is itself an English word, said without quotes, is not found.
_PASSWORD_NOUN = r"pass(?:word|phrase|code)s?|passwd|pass\s+phrase|pw|(?:wi-?fi|wpa2?)\s+key"
_PIN_NOUN = (r"pins?(?:\s+(?:code|number)s?)?|cvv2?|cvc2?|csc|(?:card\s+)?security\s+codes?"
             r"|(?:door|gate|alarm|garage|locker|lock|safe|keypad|entry|unlock|access)\s+codes?")
_TOKEN_NOUN = (r"tokens?|secret\s+access\s+keys?|(?:api|secret|access|signing|encryption|master|client|account)"
               r"[\s_\-]?keys?|(?:client|api)\s+secrets?|secrets?")
_QUALIFIER = r"(?:\s+(?:for|to|on|of|at|in|from|with)(?:\s+[\w'’@/\-]+(?:\.[\w'’@/\-]+)*){1,4}?)?"
_SAYS = (r"(?P<says>\s*(?::|=>?)\s*"
         r"|\s+(?:is|was|are|were)(?:\s+(?:now|still|currently|set\s+to|changed\s+to))?(?:\s*:\s*|\s+)"
         r"|\s+(?:set|changed)\s+to\s+)")
_QUOTED = r"""(?P<quoted>"[^"\n]{1,80}"|'[^'\n]{1,80}?'(?!\w)|`[^`\n]{1,80}`|“[^”\n]{1,80}”|‘[^’\n]{1,80}?’(?!\w))"""
_PLAIN = r"""(?P<plain>[^\s"'`“”‘’]{1,80})"""
_NOUNS = rf"(?:(?P<password>{_PASSWORD_NOUN})|(?P<pin>{_PIN_NOUN})|(?P<token>{_TOKEN_NOUN}))\b"
_STATED = re.compile(rf"(?i)(?<![\w\-]){_NOUNS}{_QUALIFIER}{_SAYS}(?:{_QUOTED}|{_PLAIN})")
# the value right after the noun: "my login is bob and password X", "the passphrase 'X'"
_NAMED = re.compile(rf"(?i)(?<![\w\-])(?:(?P<password>{_PASSWORD_NOUN})|(?P<token>{_TOKEN_NOUN}))\s+"
                    rf"(?:{_QUOTED}|{_PLAIN})")
# the value first: "hunter22 is my wifi password", "1234 is the PIN" (not "... my password manager")
_NAMED_AFTER = re.compile(
    r"""(?i)(?<![^\s("'`“‘])(?P<plain>[^\s"'`“”‘’]{4,64})["'`”’]?\s+(?:is|was|as)\s+(?:my|the|our|your|his|her|their)"""
    r"\s+(?:[\w\-]+\s+){0,2}?(?:(?P<password>pass(?:word|phrase|code)|pw)|(?P<pin>pin(?:\s+(?:code|number))?))"
    r"(?=\s*(?:[.,;:!?)]|$)|\s+(?:for|to|on|of|at|now|and|but|so|here|there)\b)")
# A login said as its two halves, a user name and a password: "my Netflix login is bob@example.com
# / Summer2024!", "credentials: admin:admin", "log in with bob / hunter2". Only the password is the
# value (as with `curl -u user:X`); the user name stays. A login said with one value ("my login is
# bob@example.com", "my login is slow today", "login is via SSO") names a user name or says how
# logging in goes, never a password, so it is no secret; "credentials" are the secret, so a lone
# value after them counts when it is shaped like a password ("the wifi credentials are Tr0ub4dor!").
_LOGIN_NOUN = (r"(?:(?:log[\s\-]?(?:in|on)s?|sign[\s\-]?(?:in|on)s?"
               r"|user[\s_\-]?(?:names?)?\s*(?:/|and|&)\s*pass(?:words?)?)|(?P<creds>credentials|creds))\b")
_LOGIN = re.compile(
    rf"(?i)(?<![\w\-$/.\\%])(?:{_LOGIN_NOUN}{_QUALIFIER}{_SAYS}"  # not in a path: sys$login:vimfiles/after
    rf"|(?:log|sign)(?:s|ged|ging|ed|ing)?[\s\-]?(?:in|on)(?:to(?:\s+[\w.\-]+){{1,3}}?)?{_QUALIFIER}\s+(?:with|using|as)\s+)"
    r"(?:(?P<user>[\w.+\-@]{2,64})(?P<sep>[ \t]*/[ \t]*|:)(?P<plain>[^\s\"'`“”‘’]{1,80})"
    r"|(?P<lone>[^\s\"'`“”‘’]{1,80}))")
# where a match of _LOGIN can start, in the lowercased text
_LOGIN_START = re.compile(r"log|sign|user|cred")
# A pair's halves that name the fields, not their values ("login is email/password", "user:pass")
_LOGIN_FIELDS = frozenset(
    "user username usernames email e-mail mail name login id userid account phone number password passwords pass "
    "pw pwd passcode pin otp code sso 2fa mfa".split())
_CODE = r"(?=[a-z\-]{0,40}\d)[a-z0-9]+(?:-[a-z0-9]+)*(?![\w\-])"
_RECOVERY = re.compile(
    r"(?i)(?<![\w\-])(?:recovery|backup|2fa|mfa|two[\s\-]factor|otp|one[\s\-]time|verification|authenticator)"
    rf"(?:\s+(?:backup|recovery))?\s+(?:codes?|keys?)\b{_QUALIFIER}{_SAYS}"
    rf"(?P<plain>{_CODE}(?:(?:\s*[,;]\s*|\s+)(?:and\s+)?{_CODE})*)")
_ANSWER = re.compile(
    r"(?i)(?<![\w\-])(?:security\s+(?:question\s+)?answers?|secret\s+answers?"
    rf"|answers?\s+to\s+(?:my|the|your|our|his|her|their)\s+security\s+questions?)\b{_QUALIFIER}{_SAYS}"
    rf"(?:{_QUOTED}|(?P<name>(?-i:[A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*){{0,3}}))|{_PLAIN})")
_SEED = re.compile(
    rf"(?i)(?<![\w\-])(?:(?:seed|recovery|backup|secret|wallet|mnemonic)\s+(?:phrase|words)|mnemonic)\b{_QUALIFIER}"
    rf"{_SAYS}(?:{_QUOTED}|(?P<plain>(?-i:[a-z]{{3,8}}(?:[\s,]+[a-z]{{3,8}}){{11,23}})))")
# Common words of three letters or more that are not in the BIP-39 list: prose, not a seed phrase
# (the short ones, "a", "in", "of", already break the run of 3-8 letter words).
_NOT_SEED_WORDS = frozenset(
    "the and for with was are were but not from has had them their she him his her which been would could "
    "should our your its who than here some many did does kept written stored".split())
# AWS prints a secret access key as 40 characters of [A-Za-z0-9/+]; a commit hash (hex, one case)
# or a word never mixes both cases with a digit or a slash.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+._\-%])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_\-%])")
# "8-character", "2FA-protected", "base64-encoded", "128-bit", "21st", "100x": a number in a word
_NUMBER_WORD = re.compile(r"(?i)[a-z]*\d+[a-z]{0,3}(?:-[a-z]+)+|\d+(?:st|nd|rd|th|x|%|k|s|am|pm|px|mb|gb)")
_WORDISH = re.compile(r"[A-Za-z]?[a-z]+|[A-Z]{2,5}|[A-Za-z0-9]{1,6}")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-+/=~]+")
_SYMBOLS = frozenset("!@#$%^&*+=~?|\\/")
_CAPITAL_LOWER_CAPITAL = re.compile(r"[A-Z][a-z][A-Z]")
# a name in code, not a value: DB_PASSWORD, $DB_PASSWORD, settings.db_password, os.environ["X"]
_CODE_REFERENCE = re.compile(r"\$?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|.*[(\[{].*")
# An unquoted value under a credential key that is code wherever it is written: a call or subscript
# that closes on its line (`token = make_token(user, ttl)`, `api_key = os.environ["X"]`; looked for
# in the text, as the value stops at the first comma or quote; `password=Tr0ub(4dor` never closes),
# an environment variable (`$API_TOKEN`), or an attribute of a receiver that code reads settings
# from (`pwd = self.password`, in an env file too: `DB_PASSWORD=settings.db_password`).
_CALL = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*[(\[][^\n]*?[)\]]")  # not "Tr0ub4dor (the old one)"
_CODE_VALUE = re.compile(
    r"\$\{?[A-Za-z_]\w*\}?"
    r"|(?:self|this|cls|os|sys|settings|config|conf|cfg|options|opts|args|request|req|env|process|ctx|context|app)"
    r"(?:\.[A-Za-z_]\w*)+[)\]]*")
# Outside an env file a name is a variable too (see _names_a_variable): words joined by _
# (new_password, token_v2; not hunter2_hunter2, a word with digits inside), a camelCase name with a
# credential word in it (hashedPassword: any other camelCase could be a generated password,
# abCdeFghIj), a credential word (`Client(password=password)`), a dotted path through one
# (form.password.data).
_SNAKE_NAME = re.compile(r"_?[a-z]+(?:_[a-z][a-z0-9]*)+")
_CAMEL_NAME = re.compile(r"[a-z]+(?:[A-Z][a-z]+)+")
_ATTRIBUTE_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CREDENTIAL_WORD = re.compile(r"(?i)passw(?:or)?d|passphrase|pwd|pass|secret|token|api_?key|credentials?")
_ENV_KEY = re.compile(r"[A-Z][A-Z0-9_]*")
_NOT_ANSWERS = frozenset("The A An My Your Our Their His Her Its It Not No In On At".split())
_TRAILING = ".,;:!?)]}"
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
# a row (a card), 40 key characters in a row (a bare AWS secret key), the start of a credential
# word or of a command that takes a password. Most text has none of them, and looking for these
# is several times cheaper than running every pattern (memory writes and bulk imports all pass
# through here). A pattern added above must keep its trigger here. Small searches, not one
# alternation: Python's re skips ahead fast only through a pattern that starts with plain
# literals or one character class, and the credential words are searched in the lowercased text
# because an ignore-case search never skips (together about half the time of the one combined
# search).
_MAYBE = (
    re.compile(r"AKIA|ASIA|ABIA|ACCA|AIza|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|sk-|_live_|_test_|hf_|npm_"
               r"|SG\.|SK[0-9a-f]|eyJ|-----BEGIN|://|sntry|pypi-|_v1_|shp(?:at|ca|pa|ss)_|dapi|lin_api_|gsk_|r8_|ntn_|ATATT3|:AA"),
    re.compile(r"\d{4}[ \-]?\d{4}"),
    re.compile(r"[A-Za-z0-9/+]{40}"),
)
_MAYBE_WORD = re.compile(
    r"(?<![a-z0-9])(?:bearer|basic|token|api|access|secret|auth|pass|pw|signing|private|connection|credential"
    r"|account|pin|code|key|cvv|cvc|csc|security|recovery|backup|seed|wallet|mnemonic|phrase"
    r"|curl|wget|mysql|mariadb|sshpass|creds)")
# A login pair (see _LOGIN) holds a "/" or a ":"; only then are the login words looked for.
_MAYBE_LOGIN = re.compile(r"(?<![a-z0-9])(?:(?:log|sign)[a-z]{0,4}[\s\-]?[io]n|user)")
# A credential word glued to a prefix (PGPASSWORD, adminPassword: see _GLUED_KEY) only makes a
# key=value, so it is looked for only in a text with a "=" or a ":" (a few in a thousand turns):
# searching every text for it cost about half again the word search above.
_MAYBE_GLUED = re.compile(r"passw|passphrase|secret|token|api[_\-]?key|credential")


def _maybe_secret(text: str) -> bool:
    lower = text.lower()
    return (_MAYBE_WORD.search(lower) is not None
            or (("=" in text or ":" in text) and _MAYBE_GLUED.search(lower) is not None)
            or (("/" in text or ":" in text) and _MAYBE_LOGIN.search(lower) is not None)
            or any(p.search(text) for p in _MAYBE))


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


def _names_a_variable(text: str, m: re.Match) -> bool:
    """An unquoted value under a credential key that is a name in code, not a credential.

    An env file or a shell line (`DB_PASSWORD=hunter2`: a key in capitals, `=` with no space
    around it) has no variables without `$`, so any other value there is a literal, dotted or not
    (`DB_PASSWORD=my.secret`). Elsewhere a snake_case name, a credential word, or a camelCase name
    or a dotted path with one in it is a variable, and so is a plain lowercase word assigned with
    spaces around `=` or to an attribute (`password = hashed`, `user.password = hashed`).

    The trade-off: `db_password = sunshine` is read as code (the words rule still finds `password =
    sunshine` when the word ends a clause), while `password=sunshine` (an ini file), `password:
    sunshine` (YAML) and `password = hunter2` (digits are no word) stay secrets.
    """
    value, sep = m.group("value"), m.group("sep").strip()
    if _CALL.match(text, m.start("value")) or _CODE_VALUE.fullmatch(value):
        return True
    key = m.group("key").strip("\\\"'")
    if _ENV_KEY.fullmatch(key) and m.group("sep") == "=":
        return False
    if _SNAKE_NAME.fullmatch(value) or _CREDENTIAL_WORD.fullmatch(value):
        return True
    if _CAMEL_NAME.fullmatch(value) or _ATTRIBUTE_PATH.fullmatch(value):
        return _CREDENTIAL_WORD.search(value) is not None
    spaced = m.group("sep") != sep
    return sep != ":" and (spaced or "." in key) and value.isalpha() and value.islower()


def _said_password(value: str, strict: bool) -> bool:
    """An unquoted value said as a password: digits, or letters mixed with digits, symbols or
    inner capitals. An English word is prose ("expired", "Bitwarden-managed"). `strict` is for a
    value with no "is" before it ("and password X"), where the noun may just be a modifier."""
    if len(value) < 4 or _is_placeholder(value) or _NUMBER_WORD.fullmatch(value) or _CODE_REFERENCE.fullmatch(value):
        return False
    if value.isdigit():
        return len(value) >= (6 if strict else 4)
    if not any(c.isalpha() for c in value):
        return False
    digits = sum(c.isdigit() for c in value)
    symbol = any(c in _SYMBOLS for c in value)
    if digits or symbol:
        if not strict:
            return True
        # with no "is" before it, not "SHA256" in "the password SHA256 hash"
        return len(value) >= 6 and (symbol or any(c.islower() for c in value) or (len(value) >= 8 and digits >= 2))
    # letters only: capitals inside, as words have at most one (GitHub, LinkedIn, iPhone)
    capitals = sum(c.isupper() for c in value[1:])
    return (not strict and value.isalpha() and any(c.islower() for c in value)
            and (capitals >= 2 or _CAPITAL_LOWER_CAPITAL.search(value) is not None))


# What a password "is" in prose, when the word ends the clause ("my password is expired."): any
# other single word there is the password itself ("my wifi password is sunshine").
_PASSWORD_STATES = frozenset(
    "expired wrong incorrect correct weak strong long short secure insecure safe unsafe saved stored changed "
    "reset required invalid valid blank empty compromised locked leaked forgotten lost new old different same "
    "simple complicated complex random unique encrypted hashed hidden private temporary optional mandatory fine "
    "okay good bad terrible great easy hard difficult memorable ready updated outdated working broken rejected "
    "accepted pending unknown known shared personal mine yours ours theirs his hers there here gone unchanged "
    "obvious guessable predictable generated managed synced protected "
    "sensitive insensitive expiring changing failing rotating syncing rotated coded hardcoded encoded salted "
    "printed written kept sent set enabled disabled enforced compliant cached remembered autofilled default "
    "based style standard".split())
_CLAUSE_END = re.compile(r"\s*(?:[.!?;,)\n]|$)")
# a conjunction ends a said value too ("my wifi password is sunshine and I love hiking")
_CONJUNCTION = re.compile(r"(?i)[ \t]+(?:and|but|so|because|though|although)\b")


def _word_password(value: str, text: str, end: int, assigned: bool) -> bool:
    """A single word said as the whole password, ending its clause ("password: sunshine.", "...
    is sunshine and I ..."), that is no word for a password's state ("my password is expired", "...
    is weak, I should change it") and no placeholder (`password = None`). A credential word assigned
    with `=` is a variable (`self.password = password`, `Client(password=password)`); said ("my
    password is password") it is the password. A conjunction ends a said value only (`passwords
    in key=value and JSON` is code), and before one a participle or an adverb is prose ("the
    password is handled and rotated by IT")."""
    if not (len(value) >= 4 and value.isalpha() and value.lower() not in _PASSWORD_STATES
            and not _is_placeholder(value) and not (assigned and _CREDENTIAL_WORD.fullmatch(value))):
        return False
    if _CLAUSE_END.match(text, end) is not None:
        return True
    return (not assigned and _CONJUNCTION.match(text, end) is not None
            and not value.lower().endswith(("ed", "ing", "ly")))


# A password said in several words: "my laptop password is purple monkey dishwasher", "my wifi
# password is correct-horse-battery-staple" (each word alone could be English, so _said_password
# and _word_password miss it). The value runs from the first word to the end of the clause, where
# punctuation, a newline or one of _PHRASE_STOPS (a function word, a conjunction, an adverb, a
# number word: "for the router", "and I love hiking", "last week") ends it. What is left is prose,
# not a password, when it is one word that is no passphrase of hyphenated parts (three or more, or two
# after "is" or ":", "qwerty-lamp", unless they say a state: "case-sensitive", "re-used"), or
# it names a length ("8 characters long"), or ends on a word for a password's state ("pretty weak",
# "case sensitive", "Bitwarden managed"), or starts on one as a participle ("stored server side",
# "kept server side"), or is two words with either one a state or the last ending in -ed
# ("weak sauce", "Keychain synchronized").
# Prose after "password is" almost always starts on a function word ("is too short", "is the same
# as before", "is stored in the vault"). The price: a two-word password with a state word
# ("correct horse") is missed, and a stop word inside a passphrase ends the value there (still a
# secret when the words before it are one, but a redacted turn keeps the words after the stop).
_PHRASE_STOPS = frozenset("""
a an the this that these those some any every each all no another other such both either neither
i me my mine myself you your yours he him his she her hers it its we us our ours they them their theirs
someone something anything nothing everything everyone whatever whichever whoever
for to on of at in into onto from with without within by via as about after before during under over above
below beneath underneath behind beside between through across against along around near inside outside per
than like unlike since until till toward towards upon off out up down away back
and but or nor so because although though while whereas unless if when where whether then yet plus
is are was were be been being am has have had do does did will would shall should can could may might must
isn don doesn didn wasn aren won get gets got
not never always usually often sometimes rarely ever also just only still even really very too quite pretty
rather fairly almost mostly mainly entirely completely totally fully simply basically literally actually
definitely probably obviously apparently honestly seriously currently recently finally already again anymore
now soon later today tonight tomorrow yesterday ago last next week weeks month months year years day days
daily weekly monthly yearly quarterly annually hourly randomly securely locally automatically manually
properly correctly regularly periodically here there everywhere somewhere anywhere nowhere enough kind sort
super way lol btw fyi thanks thank please ok okay yes
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
twenty thirty forty fifty hundred thousand first second third
what which who whom whose why how
""".split())
# words that say how long or what kind a password is ("16 characters long", "lowercase letters")
_PHRASE_UNITS = frozenset(
    "characters character chars char letters letter digits digit numbers number symbols symbol words word "
    "bits bit bytes byte lowercase uppercase numeric alphanumeric".split())
# states said as a participle that ends in no -ed, -en or -wn ("kept server side")
_PARTICIPLES = frozenset("kept sent set lost reset".split())
_PHRASE_WORD = re.compile(r"[ \t]*([^\s\"'`“”‘’]+(?:['’][^\s\"'`“”‘’]+)*)")
_PHRASE_MAX = 24


def _said_phrase(text: str, start: int, spaced: bool) -> int:
    """The end of a password said in words from `start` (see _PHRASE_STOPS), or -1; only a
    hyphenated one unless `spaced`."""
    if text.startswith(MARKER, start):
        return -1
    words: list[str] = []
    pos = end = start
    while len(words) < (_PHRASE_MAX if spaced else 1):
        m = _PHRASE_WORD.match(text, pos)
        if m is None:
            break
        token = m.group(1)
        word = token.rstrip(_TRAILING)
        low = word.lower()
        if (not any(c.isalnum() for c in word) or word[0] in "([{<" or low in _PHRASE_STOPS
                or low.replace("’", "'").partition("'")[0] in _PHRASE_STOPS):  # "(don't tell)", "I'm", "it's"
            break
        if _CODE_REFERENCE.fullmatch(word) or _is_placeholder(word):
            return -1
        words.append(word)
        end = m.start(1) + len(word)
        if word != token:  # punctuation after it ends the clause
            break
        pos = m.end()
    if len(words) == 1:
        # hyphenated: three parts or more, or two said in prose ("my password is qwerty-lamp"; the
        # prose of two parts is a state, "case-sensitive", "auto-generated", or a number, "two-factor")
        parts = words[0].split("-")
        return end if (len(parts) >= (2 if spaced else 3) and all(p.isalnum() for p in parts)
                       and _passphrase(parts, hyphenated=True)) else -1
    return end if len(words) >= 2 and _passphrase(words) else -1


def _passphrase(words: list[str], *, hyphenated: bool = False) -> bool:
    """Words (or a value's hyphenated parts) that are a passphrase, not prose (see _PHRASE_STOPS).
    A unit word names a length in words said apart ("8 characters long"); inside one hyphenated
    value it is a word of the passphrase ("Sup3r-Secret-Word"), a length there being a number
    ("12-character", "eight-character": a number word is a stop)."""
    low = [w.lower() for w in words]
    units = frozenset() if hyphenated else _PHRASE_UNITS
    if any(_NUMBER_WORD.fullmatch(w) for w in low) or any(
            p in _PHRASE_STOPS or p in units or (hyphenated and p.isdigit()) for w in low for p in w.split("-")):
        return False  # "128-bit keys", "up-to-date", "state-of-the-art", "8 characters long"
    first, last = low[0], low[-1]
    if last in _PASSWORD_STATES or (first in _PASSWORD_STATES
                                    and (first.endswith(("ed", "en", "wn")) or first in _PARTICIPLES)):
        return False
    if len(low) == 2 and (first in _PASSWORD_STATES or (len(last) >= 6 and last.endswith("ed"))):
        return False
    # two hyphenated parts ending in a participle or a use are a state: "re-used", "hand-typed", "single-use"
    if hyphenated and len(low) == 2 and (last.endswith("ed") or last in ("use", "uses", "only", "secret")):
        return False
    return not _is_placeholder(" ".join(words))


def _said_quoted(value: str) -> bool:
    """A quoted value said as a password or an answer: anything but a placeholder or a name in code."""
    return not _is_placeholder(value) and not _CODE_REFERENCE.fullmatch(value.strip())


def _said_token(value: str) -> bool:
    """A value said as a token or key: a long run of letters with digits (or of random letters), not
    a path, a number or words joined by hyphens ("base64-encoded", "AES-256-GCM")."""
    if len(value) < 12 or value[0] in "/~" or not _TOKEN_CHARS.fullmatch(value) or _is_placeholder(value):
        return False
    if _NUMBER_WORD.fullmatch(value) or _CODE_REFERENCE.fullmatch(value):
        return False
    if "-" in value and all(_WORDISH.fullmatch(part) for part in value.split("-")):
        return False
    digits = sum(c.isdigit() for c in value)
    return (digits >= 2 and any(c.isalpha() for c in value)) or _random_letters(value)


def _said_pin(noun: str, value: str) -> bool:
    """A PIN or a keypad code is 4 to 8 digits (a card's security code 3 or 4)."""
    short = noun.lower().startswith(("cv", "cs")) or "security" in noun.lower()
    return value.isdigit() and (3 if short else 4) <= len(value) <= 8


def _aws_secret(value: str) -> bool:
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    return upper >= 4 and lower >= 4 and any(c.isdigit() or c in "/+" for c in value)


def _value_span_of(m: re.Match, group: str) -> tuple[str, int, int, bool]:
    """(value, start, end, False) of an unquoted value in `group`, without the punctuation after it."""
    start = m.start(group)
    value = m.group(group).rstrip(_TRAILING)
    return value, start, start + len(value), False


def _value_span(m: re.Match) -> tuple[str, int, int, bool]:
    """(value, start, end, quoted) of a said credential: inside the quotes, or the unquoted run
    without the sentence's punctuation after it."""
    if m.groupdict().get("quoted"):
        start, end = m.span("quoted")
        return m.group("quoted")[1:-1], start + 1, end - 1, True
    return _value_span_of(m, "name" if m.groupdict().get("name") else "plain")


def _said_secrets(text: str) -> list[SecretHit]:
    """Credentials said in plain words (see _STATED)."""
    hits: list[SecretHit] = []
    for pattern in (_STATED, _NAMED, _NAMED_AFTER):
        strict = pattern is not _STATED
        for m in pattern.finditer(text):
            value, start, end, quoted = _value_span(m)
            if m.group("password") is not None:
                kind = "stated_password"
                assigned = "=" in (m.groupdict().get("says") or "")
                # several words, or hyphenated ones, after "is" or ":" (only hyphenated ones after
                # "=", or with no "is": "the passphrase correct-horse-battery-staple")
                spaced = not strict and not assigned
                phrase_end = (_said_phrase(text, start, spaced) if not quoted and (
                    "-" in value or (spaced and text[end:end + 1] in (" ", "\t"))) else -1)
                if phrase_end > start:
                    end, found = phrase_end, True
                else:
                    found = ((quoted and _said_quoted(value)) or _said_password(value, strict)
                             or (not strict and not quoted and _word_password(value, text, end, assigned)))
            elif m.groupdict().get("pin") is not None:
                kind, found = "stated_pin", _said_pin(m.group("pin"), value)
            else:
                kind, found = "stated_token", _said_token(value)
            if found:
                hits.append(SecretHit(kind, start, end))
    lower = text.lower()
    if "cred" in lower or (("/" in text or ":" in text) and _MAYBE_LOGIN.search(lower)):
        hits += _said_logins(text, lower)
    for m in _RECOVERY.finditer(text):
        value, start, end, _ = _value_span(m)
        first = re.split(r"[\s,;]+", value)[0]
        digits = sum(c.isdigit() for c in first)
        if digits >= 4 or (len(first) >= 6 and digits >= 2 and any(c.isalpha() for c in first)):
            hits.append(SecretHit("recovery_code", start, end))
    for m in _ANSWER.finditer(text):
        value, start, end, quoted = _value_span(m)
        if quoted:
            found = _said_quoted(value)
        elif m.group("name"):
            found = len(value) >= 3 and value.split()[0] not in _NOT_ANSWERS
        else:
            found = _said_password(value, strict=False)
        if found:
            hits.append(SecretHit("security_answer", start, end))
    for m in _SEED.finditer(text):
        value, start, end, quoted = _value_span(m)
        if _said_quoted(value) if quoted else not _NOT_SEED_WORDS.intersection(re.split(r"[\s,]+", value)):
            hits.append(SecretHit("seed_phrase", start, end))
    return hits


def _login_matches(text: str, lower: str):
    """_LOGIN.finditer(text), tried only where a login word starts: an ignore-case pattern is
    tried at every character, while a few literals in the lowercased text are skipped to (on long
    prose about a quarter of the time)."""
    if len(lower) != len(text):  # a character that lowercases to two: positions would shift
        yield from _LOGIN.finditer(text)
        return
    pos = 0
    for start in _LOGIN_START.finditer(lower, pos):
        if start.start() >= pos and (m := _LOGIN.match(text, start.start())) is not None:
            pos = m.end()
            yield m


def _said_logins(text: str, lower: str) -> list[SecretHit]:
    """The password of a login said in words (see _LOGIN)."""
    hits: list[SecretHit] = []
    for m in _login_matches(text, lower):
        if m.group("lone") is not None:  # one value: a password only after "credentials"
            value, start, end, _ = _value_span_of(m, "lone")
            if m.group("creds") is not None and value[:1] not in "/~" and _said_password(value, strict=False):
                hits.append(SecretHit("stated_login", start, end))
            continue
        value, start, end, _ = _value_span(m)
        if _login_password(m.group("user"), m.group("sep").strip(), value) and not text.startswith(MARKER, start):
            hits.append(SecretHit("stated_login", start, end))
    return hits


def _login_password(user: str, sep: str, value: str) -> bool:
    """The second half of "user / password" or "user:password" after a login word, when it is a
    password: not a field's name ("email/password"), a state ("slow/broken"), a time (10:30am), a
    path or an address (example.com/signin, https://...), or two names ("Google/Apple", "SSO/SAML")."""
    if len(value) < 3 or _is_placeholder(value) or "/" in value or value[0] in "~\\":
        return False
    if user.isdigit() or user.lower() in _LOGIN_FIELDS or value.lower() in _LOGIN_FIELDS:
        return False
    if _CREDENTIAL_WORD.fullmatch(value) or value.lower() in _PASSWORD_STATES or _NUMBER_WORD.fullmatch(value):
        return False
    if sep == "/" and "." in user and "@" not in user:
        return False
    return not (user.isalpha() and value.isalpha() and user[0].isupper() and value[0].isupper())


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


def _key_values(text: str) -> list[SecretHit]:
    """Values under a credential key (see _KEY_VALUE) that are no name in code."""
    hits: list[SecretHit] = []
    if "=" not in text and ":" not in text:  # a cheap test first: most prose has neither
        return hits
    for m in _KEY_VALUE.finditer(text):
        if not m.group("q") and _names_a_variable(text, m):  # a quoted value is a literal
            continue
        if _value_looks_secret(m.group("key"), m.group("value")):
            hits.append(SecretHit("credential_assignment", m.start("value"), m.end("value")))
    return hits


def _command_passwords(text: str) -> list[SecretHit]:
    """Passwords given to a command (see _COMMAND_PASSWORD); `-p$PASS`, `-u user:%TOKEN%` and
    `<password>` stand for one."""
    hits: list[SecretHit] = []
    if " -" not in text and "\t-" not in text:  # every option follows a space or a tab
        return hits
    for m in _COMMAND_PASSWORD.finditer(text):
        value = m.group(m.lastgroup)
        start, end = m.span(m.lastgroup)
        if value[0] in "'\"":
            value, start, end = value[1:-1], start + 1, end - 1
        if not value.startswith(("$", "%")) and _value_looks_secret("password", value):
            hits.append(SecretHit("command_line_password", start, end))
    return hits


def find_secrets(text: str) -> list[SecretHit]:
    """Every secret-like span in `text` (possibly overlapping), in order of appearance."""
    if not text or not _maybe_secret(text):
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
    hits += _key_values(text) + _command_passwords(text)
    for m in _AWS_SECRET.finditer(text):
        if _aws_secret(m.group(0)):
            hits.append(SecretHit("aws_secret_access_key", m.start(), m.end()))
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _card_issuer(digits) and luhn_valid(digits):
            hits.append(SecretHit("card_number", m.start(), m.end()))
    # a value that a provider's shape, a key=value or a card already named keeps that kind alone
    hits += [said for said in _said_secrets(text)
             if not any(h.start <= said.start and said.end <= h.end for h in hits)]
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


def json_strings(value) -> list[str]:
    """Every string inside a JSON-like value, keys too, as the strings they are (the JSON text of a
    `"` is `\\"`, and that backslash would hide a code line from the code rules)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*json_strings(k), *json_strings(v))]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in json_strings(v)]
    return []


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


# Each kind in words, for the person reading a refusal (the code stays for a program reading it).
KIND_WORDS = {
    "auth_header": "an Authorization header", "aws_access_key_id": "an AWS access key id",
    "aws_secret_access_key": "an AWS secret key", "card_number": "a card number",
    "command_line_password": "a password on a command line",
    "credential_assignment": "a password or key set to a value",
    "github_token": "a GitHub token", "gitlab_token": "a GitLab token", "google_api_key": "a Google API key",
    "huggingface_token": "a Hugging Face token", "npm_token": "an npm token", "openai_style_key": "an API key",
    "pem_private_key": "a private key", "recovery_code": "recovery codes", "security_answer": "a security answer",
    "seed_phrase": "a seed phrase", "sendgrid_key": "a SendGrid key", "slack_token": "a Slack token",
    "slack_webhook": "a Slack webhook", "stated_login": "a login's password", "stated_password": "a password",
    "stated_pin": "a PIN", "stated_token": "a token", "stripe_key": "a Stripe key", "twilio_key": "a Twilio key",
    "url_credentials": "a password in a URL", "sentry_token": "a Sentry token", "pypi_token": "a PyPI token",
    "digitalocean_token": "a DigitalOcean token", "shopify_token": "a Shopify token",
    "databricks_token": "a Databricks token", "linear_api_key": "a Linear API key", "groq_api_key": "a Groq API key",
    "replicate_token": "a Replicate token", "notion_token": "a Notion token", "atlassian_token": "an Atlassian token",
    "telegram_bot_token": "a Telegram bot token", "your_api_key": "an API key",
}


def kinds_in_words(kinds) -> str:
    """Kinds of secret as a person reads them, each once ("an AWS access key id, a token, an AWS secret
    key"): a refusal read "an AWS access key id: aws_access_key_id, a token: stated_token". The codes
    stay where a program reads them: SecretBlocked.kinds and the audit event's detail."""
    said: list[str] = []
    for kind in kinds:
        words = KIND_WORDS.get(kind, str(kind).replace("_", " "))
        if words not in said:
            said.append(words)
    return ", ".join(said)


def refused_in_words(kinds) -> str:
    """What a refused store or edit says: the kinds found, in words, never the value."""
    return f"secret-like content is never stored ({kinds_in_words(kinds)})"


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
        raise SecretBlocked(f"{what} holds secret-like content ({kinds_in_words(kinds)}): Keepmind never stores "
                            "credentials; remove the value and send the rest", tuple(kinds))
