"""Secrets never reach the database file; benign look-alikes are kept.

Every secret is generated at run time (no credential-shaped literal in the repository); the
test then searches the raw bytes of the database and its WAL for each secret's random part.
"""

import json
import random

import pytest

from keepmind.engine.db import scalar
from keepmind.engine.secretfilter import contains_secret, redact
from support.provider import drain
from support.secret_corpus import benign_corpus, card, database_bytes, secret_corpus

OBSERVER = "You distil a conversation"


def test_corpus_sizes_and_detector():
    secrets, benign = secret_corpus(), benign_corpus()
    assert len(secrets) >= 50 and len(benign) >= 50
    assert [s for s, _ in secrets if not contains_secret(s)] == []
    assert [b for b in benign if contains_secret(b)] == []
    for sentence, core in secrets:
        assert core not in redact(sentence)[0]


def test_every_random_draw_of_the_corpus_is_caught():
    # keys that end in - or _, JSON api keys and bearer tokens without a digit: each came up in
    # about one draw in a hundred and slipped through
    missed = [s for seed in range(100) for s, core in secret_corpus(seed) if core in redact(s)[0]]
    assert missed == []
    assert [b for seed in range(100) for b in benign_corpus(seed) if contains_secret(b)] == []


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
    raw = database_bytes(home)
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
    raw = database_bytes(home)
    assert [core for _, core in secrets if core.encode() in raw] == []


@pytest.mark.parametrize("text", [
    "compass: north", "the token expires in 30 minutes", "Basic internationalization support",
    "token_count=12", "password: <redacted>", "api_key=${API_KEY}",
    "password = None", "password = null", "password: None", "In settings.py the default is password = None",
])
def test_prose_and_placeholders_are_not_secrets(text):
    assert not contains_secret(text)


@pytest.mark.parametrize("line", [
    "token = current_token()", "password = getpass.getpass()", 'api_key = os.environ["OPENAI_API_KEY"]',
    'token = request.headers.get("Authorization")', "secret = settings.secret_key", "pwd = self.password",
    "client = Client(token=self.token)", "export GITHUB_TOKEN=$GH_TOKEN", "const token = process.env.API_TOKEN;",
    # a call whose arguments hold a comma, a name (snake_case, a credential word, an attribute's)
    "self.password = password  # set in __init__", "In the client we do token = make_token(user, ttl) before each call.",
    "token = current_token(user, scope)", "token = jwt.encode(payload, key)", "hashed_password = hash(pw)",
    "password = new_password", "token = refresh_token", "user.password = hashed", "self.token = token",
    "password=form.password.data", "Client(password=password, token=token)", "{ password: hashedPassword }",
    "password = hashed",
])
def test_a_code_line_that_reads_a_credential_is_not_one(line):
    """A memory about code ("we read the token with `token = current_token()`") is kept."""
    assert not contains_secret(line)


@pytest.mark.parametrize("line", [
    "DB_PASSWORD=my.secret", "password=Tr0ub(4dor", "token=9f8e7d6c5b4a3f2e1d0c", 'password = "get(x)"',
    "API_TOKEN=ghx7Hq2LmN9pR4sT8vW1yZ3b", "DB_PASSWORD=hunter2hunter2", "secret: Abc123xyz!",
    "password = hunter2", "password=sunshine", "password=Tr0ub4dor (the old one)",
])
def test_a_value_that_only_resembles_code_is_still_a_secret(line):
    assert contains_secret(line)


def _id_with_card_digits() -> tuple[str, str]:
    """A session-shaped id (ses-<32 hex>) whose hex holds a Luhn-valid 16-digit card number."""
    digits = card("6011", 16, random.Random(7))
    return f"ses-ab{digits}{'cdef' * 3}cd", digits


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


def test_a_curator_merge_that_holds_a_secret_is_never_written(llm_engine, provider, personal, home):
    old = "The deploy runs from the release branch every Friday at 16:00."
    new = "The deploy also runs on Monday at 09:00 from the release branch."
    llm_engine.store_memory(personal, "Deploy", old)
    drain(llm_engine)
    [doc] = llm_engine.list_memories(personal)
    sentence, core = next((s, c) for s, c in secret_corpus() if "ghp_" in s)
    provider.script("You curate a long-term memory", f"UPDATE {doc.id}\n---\n{old} {new} {sentence}")
    llm_engine.store_memory(personal, "Deploy", new)
    [outcome] = drain(llm_engine)
    assert outcome.status == "dead" and "secret-like content (a GitHub token)" in outcome.reason
    assert core not in outcome.reason
    # said as what happened: the model wrote it, and a retry asks the model again (a walk was told to
    # "remove the value and send the rest" of a proposal nobody can edit)
    assert outcome.reason.startswith("the curator model's merged text held secret-like content")
    assert f"`keepmind checkpoints retry {outcome.checkpoint_id}`" in outcome.reason
    assert [r["body"] for r in llm_engine.revisions(personal, doc.id)] == [old]
    assert core.encode() not in database_bytes(home)
