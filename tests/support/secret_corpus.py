"""The secret corpus: sentences holding credentials of every kind the filter knows, and look-alikes.

Every secret is generated at run time (no credential-shaped literal in the repository). Tests
store or send the sentences through a path, then search raw bytes (the database, its WAL, every
file of the data dir) for each secret's random part with `leaks`.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

from keepmind.engine.secretfilter import luhn_valid

RNG = random.Random(20261130)
UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase
HEX = "0123456789abcdef"


def _r(alphabet, n):
    return "".join(RNG.choice(alphabet) for _ in range(n))


def _b64url(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def chosen_password(rng: random.Random = RNG) -> str:
    """Letters and two digits with a symbol inside, like a password a person picked."""
    chars = [rng.choice(string.ascii_letters) for _ in range(7)] + [rng.choice(string.digits) for _ in range(2)]
    rng.shuffle(chars)
    chars.insert(rng.randint(1, len(chars) - 1), rng.choice("!#%&*@"))
    return "".join(chars)


def words(n: int, rng: random.Random = RNG) -> list[str]:
    """`n` made-up lowercase words of 5 to 8 letters (never an English function word)."""
    return ["".join(rng.choice(LOWER) for _ in range(rng.randint(5, 8))) for _ in range(n)]


def card(prefix: str, length: int, rng: random.Random = RNG) -> str:
    while True:
        digits = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix)))
        if luhn_valid(digits):
            return digits


def secret_corpus(seed: int = 20261130) -> list[tuple[str, str]]:
    """(sentence holding a secret, the secret's random part that must never be stored); the same
    sentences for the same seed, whichever tests ran before."""
    RNG.seed(seed)
    out = []
    for _ in range(3):
        key = _r(UPPER_DIGITS, 16)
        out.append((f"Our CI uses the AWS key {'AKIA' + key} for uploads.", key))
        secret = _r(ALNUM + "/+", 40)
        out.append((f"export AWS_SECRET_ACCESS_KEY={secret}", secret))
        tok = _r(ALNUM, 36)
        out.append((f"My GitHub token is {'ghp_' + tok}, please use it for the release.", tok))
        pat = _r(ALNUM + "_", 60)
        out.append((f"Use {'github_pat_' + pat} for the bot account.", pat))
        slack = f"{_r(string.digits, 12)}-{_r(string.digits, 12)}-{_r(ALNUM, 24)}"
        out.append((f"The Slack bot token: {'xoxb-' + slack}", slack))
        hook = f"T{_r(UPPER_DIGITS, 8)}/B{_r(UPPER_DIGITS, 8)}/{_r(ALNUM, 24)}"
        out.append((f"Post alerts to https://hooks.slack.com/services/{hook} please.", hook.split('/')[-1]))
        oai = _r(ALNUM, 48)
        out.append((f"OPENAI key for the notebook: {'sk-' + oai}", oai))
        proj = _r(ALNUM + "_-", 64)
        out.append((f"New project key {'sk-proj-' + proj}", proj))
        ant = _r(ALNUM + "-_", 80)
        out.append((f"Claude key sk-ant-api03-{ant}", ant))
        stripe = _r(ALNUM, 24)
        out.append((f"Stripe live key is {'sk_live_' + stripe}.", stripe))
        gkey = _r(ALNUM + "_-", 35)
        out.append((f"Maps API key AIza{gkey} for the store locator.", gkey))
        hf = _r(ALNUM, 34)
        out.append((f"HF token hf_{hf} for private models.", hf))
        jwt = f"{_b64url({'alg': 'HS256', 'typ': 'JWT'})}.{_b64url({'sub': _r(ALNUM, 12), 'exp': 1900000000})}.{_r(ALNUM + '-_', 43)}"
        out.append((f"Session cookie was {jwt}", jwt.split(".")[-1]))
        body = "\n".join(_r(ALNUM + "+/", 64) for _ in range(6))
        dashes = "-" * 5
        pem = f"{dashes}BEGIN RSA PRIVATE KEY{dashes}\n{body}\n{dashes}END RSA PRIVATE KEY{dashes}"
        out.append((f"Deploy key:\n{pem}", body.splitlines()[2]))
        pw = _r(ALNUM + "!@#%^&*", 14)
        out.append((f"DB_PASSWORD={pw}", pw))
        pw2 = _r(ALNUM + "!#%", 12)
        out.append((json.dumps({"host": "db.internal", "user": "app", "password": pw2}), pw2))
        api = _r(ALNUM, 32)
        out.append((json.dumps({"service": "mailer", "api_key": api}), api))
        pw3 = _r(ALNUM, 12)
        out.append((f"postgres://app_user:{pw3}@db.internal:5432/billing", pw3))
        pw4 = _r(ALNUM, 16)
        out.append((f"Server=sql01;Database=crm;User Id=sa;Password={pw4};", pw4))
        bearer = _r(ALNUM + "._-", 40)
        out.append((f"curl -H 'Authorization: Bearer {bearer}' https://api.example.com", bearer))
        # said without quotes, a password is found by its shape: letters alone that could be a word
        # ("efkbpfheef", "iPhone") read as prose, so the draw holds a digit as most passwords do
        said = _r(ALNUM, 8) + _r(string.digits, 1) + _r(ALNUM, 1)
        out.append((f"fyi my password is {said} for the router", said))
        visa = card("4", 16)
        out.append((f"Charge it to card {visa[:4]} {visa[4:8]} {visa[8:12]} {visa[12:]} please.", visa[8:12] + " " + visa[12:]))
        mc = card("52", 16)
        out.append((f"My Mastercard number is {mc}.", mc))
        mongo = _r(ALNUM, 14)
        out.append((f"mongodb+srv://admin:{mongo}@cluster0.example.net/test", mongo))
        # JSON held inside a string (a tool's output logged as text): the quotes come escaped
        nested = _r(ALNUM + "!#%", 12)
        out.append((f"tool result: {json.dumps(json.dumps({'user': 'app', 'password': nested}))}", nested))
        # a quote or an apostrophe inside the value: the rest of it stayed after the first one
        head, tail = _r(ALNUM, 6), _r(ALNUM, 8)
        out.append((json.dumps({"password": f'{head}"{tail}'}), tail))
        head, tail = _r(ALNUM, 5), _r(ALNUM, 9)
        out.append((json.dumps({"client_secret": f"{head}'{tail}"}), tail))
        sentry = _b64url({"iat": 1700000000, "url": "https://sentry.io", "org": _r(LOWER, 8)}) + "_" + _r(ALNUM, 43)
        out.append((f"SENTRY_AUTH_TOKEN for the release step: sntrys_{sentry}", sentry[-43:]))
        # provider tokens of a prefix and a run of one alphabet: (sentence before the token, prefix, alphabet, length)
        for said, prefix, alphabet, n in [
                ("twine upload with", "pypi-AgEIcHlwaS5vcmc", ALNUM + "_-", 120),
                ("The droplet API token is", "dop_v1_", HEX, 64), ("Shopify admin token", "shpat_", HEX, 32),
                ("Databricks:", "dapi", HEX, 32), ("Linear key for the triage bot:", "lin_api_", ALNUM, 40),
                ("GROQ_KEY", "gsk_", ALNUM, 52), ("replicate uses", "r8_", ALNUM, 37),
                ("Jira API token", "ATATT3", ALNUM + "_-", 180)]:
            value = _r(alphabet, n)
            out.append((f"{said} {prefix}{value}", value[:60]))
        notion = _r(string.digits, 11) + _r(ALNUM, 35)
        out.append((f"Notion integration ntn_{notion}", notion[11:]))
        atl = _r(ALNUM + "_-", 180)
        out.append((f"Jira API token ATATT3{atl}", atl[:60]))
        bot = f"{_r(string.digits, 10)}:AA{_r(ALNUM + '_-', 33)}"
        out.append((f"The Telegram bot token is {bot}", bot.split(":AA")[1]))
    return out + said_in_words()


def said_in_words() -> list[tuple[str, str]]:
    """Credentials a person says in plain words (a password named in a sentence, a PIN, a token
    after "is", a bare AWS secret key on its own line, backup codes, a security answer, a seed
    phrase). A value's core is the part the old rules left in place, where they caught some."""
    out = []
    pw = chosen_password()
    out.append((f"my ssh password for the server is {pw}", pw))
    token = _r(HEX, 32)
    out.append((f"the api token is {token}", token))
    prod = _r(ALNUM, 36)
    out.append((f"the access token for prod is {prod}.", prod))
    bare = _r(ALNUM + "/+", 40)
    out.append((f"Here are the keys:\n{bare}\nkeep them safe", bare))
    pin = _r(string.digits, 8)  # eight digits: a four-digit core would turn up in any database's bytes
    out.append((f"My bank PIN is {pin}", pin))
    pin = _r(string.digits, 8)
    out.append((f"PIN for the debit card: {pin}", pin))
    phrase = "-".join(words(2)) + "-" + _r(string.digits, 2)
    out.append((f"the passphrase '{phrase}'", phrase))
    wifi = words(4)
    out.append((f"the wifi password is '{' '.join(wifi)}'", " ".join(wifi[1:])))
    said = words(1)[0] + _r(string.digits, 2)
    out.append((f"password for wifi: {said}", said))
    login = chosen_password()
    out.append((f"my login is bob and password {login}", login))
    said = words(1)[0] + _r(string.digits, 3)
    out.append((f"{said} is my wifi password", said))
    codes = [f"{_r(string.digits, 4)}-{_r(string.digits, 4)}" for _ in range(3)]
    out.append((f"my 2FA backup codes are {', '.join(codes)}", codes[1]))
    answer = words(1)[0].capitalize()
    out.append((f"my security answer is {answer}", answer))
    seed = words(12)
    out.append((f"my seed phrase is {' '.join(seed)}", " ".join(seed[6:])))
    return out


def benign_corpus(seed: int = 20261201) -> list[str]:
    """Sentences that look a little like secrets and are not (ids, hashes, colours, versions)."""
    RNG.seed(seed)
    out = []
    for i in range(10):
        out.append(f"Ticket {i}: the job id is {RNG.getrandbits(128):032x}"[:60] + " (a UUID-like id).")
        u = f"{_r('0123456789abcdef', 8)}-{_r('0123456789abcdef', 4)}-4{_r('0123456789abcdef', 3)}-a{_r('0123456789abcdef', 3)}-{_r('0123456789abcdef', 12)}"
        out.append(f"The tenant UUID for workspace {i} is {u}.")
        out.append(f"The fix landed in commit {_r('0123456789abcdef', 40)} on main.")
        out.append(f"Brand colour number {i} is #{_r('0123456789abcdef', 6)} on the landing page.")
        out.append(f"We pinned numpy {RNG.randint(1, 2)}.{RNG.randint(0, 30)}.{RNG.randint(0, 9)} in build {i}.")
        out.append(f"Call the front desk on +1 415 555 {RNG.randint(1000, 9999)} after {i + 1} pm.")
    out.append("The token budget is max_tokens=4096 for the curator.")
    out.append("Password rotation happens every 90 days per the policy.")
    return out + PROSE_ABOUT_CREDENTIALS


# Prose about passwords, PINs and tokens that names no value: each one is a memory to keep.
PROSE_ABOUT_CREDENTIALS = [
    "I use 1Password as my password manager.",
    "My password manager is Bitwarden.",
    "The PIN pad at the office is broken.",
    "I forgot my PIN again yesterday.",
    "The API token expires after 3600 seconds.",
    "Reset your password via the portal.",
    "The passphrase must be at least 12 characters.",
    "I need to change my password tomorrow.",
    "The access token is refreshed every hour.",
    "my password is too short",
    "My work password is expired again.",
    "The password for the admin account is stored in the vault.",
    "My new password is the same as before.",
    "My laptop password is weak, I should change it.",
    "The API key is base64-encoded in the config file.",
    "The session token is valid for 24 hours.",
    "The token is 128-bit and rotates daily.",
    "PINs are 4-6 digits at most banks.",
    "The door code changes every month.",
    "The access code for the building is on my badge.",
    "The recovery code is printed on a card in the safe.",
    "Backup codes are in the top drawer of my desk.",
    "The security answer is case-sensitive on that site.",
    "The secret is to add a pinch of salt to the caramel.",
    "My seed phrase is written on paper and kept in a fireproof box.",
    "Bitwarden is my password manager at work.",
]


def database_bytes(home) -> bytes:
    """The raw bytes of the database file and its WAL."""
    data = b""
    for name in ("keepmind.db", "keepmind.db-wal"):
        path = Path(home) / name
        if path.exists():
            data += path.read_bytes()
    return data


def leaks(cores, *roots) -> list[tuple[str, str]]:
    """(file, secret) for every secret core found in the bytes of any file under `roots`."""
    found = []
    for root in map(Path, roots):
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
        for path in files:
            data = path.read_bytes()
            found += [(str(path.relative_to(root) if path != root else path.name), core) for core in cores
                      if core.encode() in data]
    return found
