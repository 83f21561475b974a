"""Secrets never reach the database file; benign look-alikes are kept.

Every secret is generated at run time (no credential-shaped literal in the repository); the
test then searches the raw bytes of the database and its WAL for each secret's random part.
"""

import base64
import json
import random
import string

import pytest

from keepmind.engine.db import scalar
from keepmind.engine.writepath.secrets import contains_secret, luhn_valid, redact
from support.provider import drain

OBSERVER = "You distil a conversation"
RNG = random.Random(20261130)
UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits


def _r(alphabet, n):
    return "".join(RNG.choice(alphabet) for _ in range(n))


def _b64url(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def _card(prefix: str, length: int, rng: random.Random = RNG) -> str:
    while True:
        digits = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix)))
        if luhn_valid(digits):
            return digits


def secret_corpus() -> list[tuple[str, str]]:
    """(sentence holding a secret, the secret's random part that must never be stored)."""
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
        said = _r(ALNUM, 10)
        out.append((f"fyi my password is {said} for the router", said))
        visa = _card("4", 16)
        out.append((f"Charge it to card {visa[:4]} {visa[4:8]} {visa[8:12]} {visa[12:]} please.", visa[8:12] + " " + visa[12:]))
        mc = _card("52", 16)
        out.append((f"My Mastercard number is {mc}.", mc))
        mongo = _r(ALNUM, 14)
        out.append((f"mongodb+srv://admin:{mongo}@cluster0.example.net/test", mongo))
    return out


def benign_corpus() -> list[str]:
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
    return out


def _raw_bytes(home) -> bytes:
    data = b""
    for name in ("keepmind.db", "keepmind.db-wal"):
        path = home / name
        if path.exists():
            data += path.read_bytes()
    return data


def test_corpus_sizes_and_detector():
    secrets, benign = secret_corpus(), benign_corpus()
    assert len(secrets) >= 50 and len(benign) >= 50
    assert [s for s, _ in secrets if not contains_secret(s)] == []
    assert [b for b in benign if contains_secret(b)] == []
    for sentence, core in secrets:
        assert core not in redact(sentence)[0]


def test_no_secret_reaches_the_database_file_and_look_alikes_are_kept(llm_engine, provider, personal, home, clock):
    secrets, benign = secret_corpus(), benign_corpus()
    results = []
    for i, (sentence, _) in enumerate(secrets):
        route = i % 4
        if route == 0:
            results.append(llm_engine.store_memory(personal, "Credentials", sentence))
        elif route == 1:
            results += llm_engine.add_findings(personal, [sentence])
        elif route == 2:
            results.append(llm_engine.compact(personal, f"Summary. {sentence}"))
        else:
            llm_engine.add_turn(personal, user=f"Remember this: {sentence}", assistant="I will not store that.")
    assert {r.action for r in results} == {"blocked"}
    # the observer's model also tries to propose one of them (its reply holds the raw secret)
    sneaky = secrets[0][0]
    provider.script(OBSERVER, json.dumps({"proposals": [
        {"operation": "upsert_document", "memoryClass": "durable_fact", "subjectKind": "user",
         "anchor": {"canonicalName": "ci-credentials", "anchorType": "project"}, "title": "CI credentials",
         "content": sneaky, "aliases": ["ci"], "facets": ["project"], "confidence": 0.9}]}))
    clock.advance(120_000)
    run = llm_engine.writepath.observer.distill(personal, clock(), "idle")
    assert run.status == "completed" and run.checkpoint_ids == ()
    # look-alikes are similar to each other, so the curator is asked; it keeps each one
    provider.script("You curate a long-term memory", *["CREATE"] * len(benign))
    for text in benign:
        assert llm_engine.store_memory(personal, "", text).action == "queued"
    drain(llm_engine)
    raw = _raw_bytes(home)
    leaked = [core for _, core in secrets if core.encode() in raw]
    assert leaked == []
    with llm_engine.db.snapshot() as conn:
        kept = scalar(conn, "SELECT COUNT(*) FROM memory_documents")
        blocked = scalar(conn, "SELECT COUNT(*) FROM curation_events WHERE action='blocked' AND reason='secret'")
    assert kept == len(benign)
    assert blocked >= len(results) + 1
    for text in benign:
        assert text.encode() in raw
    llm_engine.close()
    raw = _raw_bytes(home)
    assert [core for _, core in secrets if core.encode() in raw] == []


@pytest.mark.parametrize("text", [
    "compass: north", "the token expires in 30 minutes", "Basic internationalization support",
    "token_count=12", "password: <redacted>", "api_key=${API_KEY}",
])
def test_prose_and_placeholders_are_not_secrets(text):
    assert not contains_secret(text)


def _id_with_card_digits() -> tuple[str, str]:
    """A session-shaped id (ses-<32 hex>) whose hex holds a Luhn-valid 16-digit card number."""
    card = _card("6011", 16, random.Random(7))
    return f"ses-ab{card}{'cdef' * 3}cd", card


def test_card_shaped_digits_inside_an_id_or_hash_are_not_a_card_number():
    session_id, card = _id_with_card_digits()
    assert contains_secret(f"Card {card} please.")  # on its own it is one
    assert not contains_secret(session_id)
    assert not contains_secret(f"The fix landed in commit 3e{card}9f0a on main.")


def test_a_session_whose_random_id_holds_card_digits_still_stores(engine, monkeypatch):
    # uuid4 hex holds a Luhn-valid card-shaped digit run about once in 5,700 ids: every explicit
    # memory of such a session used to be "blocked" as a secret (it was the session id, in the
    # checkpoint's provenance)
    from keepmind.engine import sessions

    session_id, _ = _id_with_card_digits()
    monkeypatch.setattr(sessions, "new_id", lambda prefix: session_id)
    assert engine.open_session("personal", "work") == session_id
    result = engine.store_memory(session_id, "Home airport", "User's home airport is Boston Logan (BOS).")
    assert result.action == "queued"
    [outcome] = drain(engine)
    assert outcome.action == "create"
    assert [m.body for m in engine.list_memories(session_id)] == ["User's home airport is Boston Logan (BOS)."]
