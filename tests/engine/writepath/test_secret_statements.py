"""A credential stated in a sentence is never stored, whatever its value looks like.

A user walk stored these three as memories on both write paths: a password of hyphenated words,
one of several spaced words (each an English word alone) and a login said as "user / password".
The sentences are the walk's own; the values are people's well-known examples, not credentials.
"""

from __future__ import annotations

import json

import pytest

from keepmind.engine.secretfilter import KIND_WORDS, MARKER, redact, secret_kinds
from support.provider import drain
from support.secret_corpus import database_bytes

OBSERVER = "You distil a conversation"

# (sentence, the value that must never be stored, the kind, the sentence as redacted)
WALK = [
    ("My wifi password is correct-horse-battery-staple.", "correct-horse-battery-staple", "stated_password",
     f"My wifi password is {MARKER}."),
    ("My wifi password is correct-horse-battery-staple and I love hiking on Sundays.", "correct-horse-battery-staple",
     "stated_password", f"My wifi password is {MARKER} and I love hiking on Sundays."),
    ("My laptop password is purple monkey dishwasher", "purple monkey dishwasher", "stated_password",
     f"My laptop password is {MARKER}"),
    ("My Netflix login is bob@example.com / Summer2024!", "Summer2024", "stated_login",
     f"My Netflix login is bob@example.com / {MARKER}!"),
    # a later walk: a value ending in a unit word ("-word") and one of two hyphenated words were kept
    ("My password is correct-horse-word.", "correct-horse-word", "stated_password", f"My password is {MARKER}."),
    ("Remember that my password is Blue-Sky-Word and I like jazz.", "Blue-Sky-Word", "stated_password",
     f"Remember that my password is {MARKER} and I like jazz."),
    ("My ssh password for the server is qwerty-lamp.", "qwerty-lamp", "stated_password",
     f"My ssh password for the server is {MARKER}."),
]
VALUES = [value for _, value, _, _ in WALK]


@pytest.mark.parametrize(("sentence", "value", "kind", "redacted"), WALK, ids=[w[0] for w in WALK])
def test_the_walks_sentences_are_secrets_and_their_whole_value_is_redacted(sentence, value, kind, redacted):
    assert secret_kinds(sentence) == [kind]
    assert redact(sentence) == (redacted, [kind])


@pytest.mark.parametrize("sentence", [
    "My password is correct horse battery staple.",
    "The wifi password is purple monkey dishwasher, don't share it.",
    "The password for the shed lock is purple monkey dishwasher.",
    "My laptop passphrase is purple monkey dishwasher.",
    "The router password was changed to purple monkey dishwasher last week.",
    "My password is \"purple monkey dishwasher\".",
    "Password: purple monkey dishwasher",
    "My laptop password is purple monkey dishwasher (don't tell anyone).",
])
def test_no_word_of_a_password_said_in_words_is_left_by_the_redaction(sentence):
    redacted, kinds = redact(sentence)
    assert "stated_password" in kinds
    assert MARKER in redacted
    left = redacted.lower().replace("correct horse battery staple", "")
    assert not {"correct", "horse", "battery", "staple", "purple", "monkey", "dishwasher"} & set(left.split())


@pytest.mark.parametrize(("sentence", "redacted"), [
    ("log in with admin / admin", f"log in with admin / {MARKER}"),
    ("User logs into Netflix with bob@example.com / Summer2024!", f"User logs into Netflix with bob@example.com / {MARKER}!"),
    ("I logged in to the router as admin / admin", f"I logged in to the router as admin / {MARKER}"),
    ("The router login is admin:hunter22", f"The router login is admin:{MARKER}"),
    ("My credentials are bob / Tr0ub4dor", f"My credentials are bob / {MARKER}"),
    ("username and password are bob / hunter2", f"username and password are bob / {MARKER}"),
    ("The wifi credentials are Tr0ub4dor!", f"The wifi credentials are {MARKER}!"),
])
def test_a_login_keeps_its_user_name_and_loses_its_password(sentence, redacted):
    assert redact(sentence) == (redacted, ["stated_login"])


# What the brief names as prose, with the decision for "My login is slow today": a login said with
# one value is a user name or says how logging in goes, so it is kept.
@pytest.mark.parametrize("text", [
    "My password manager is 1Password.", "I changed my password yesterday.",
    "The password policy requires 12 characters.", "I forgot my Netflix password again", "My login is slow today",
    "Password resets go through the IT portal.", "The secret is to add a pinch of salt to the caramel.",
    # two hyphenated words that say what a password is like, not what it is
    "My password is case-sensitive.", "The password is auto-generated.", "The password is re-used everywhere, I know.",
    "My password is two-factor protected.", "The password is 12-character minimum.", "My password is up-to-date.",
])
def test_prose_about_a_password_or_a_login_is_kept(text):
    assert secret_kinds(text) == []


@pytest.mark.parametrize(("sentence", "_value", "_kind", "_redacted"), WALK, ids=[w[0] for w in WALK])
def test_a_redacted_sentence_is_no_secret_any_more(sentence, _value, _kind, _redacted):
    once = redact(sentence)[0]
    assert redact(once) == (once, [])


def test_the_rule_write_path_never_stores_a_stated_credential(engine, personal, clock, home):
    for sentence, _, kind, _ in WALK:
        result = engine.store_memory(personal, "Accounts", sentence)
        said = f"secret-like content is never stored ({KIND_WORDS[kind]})"  # in words: no codes
        assert (result.action, result.reason) == ("blocked", said)
        engine.add_turn(personal, user=sentence, assistant="Noted.")
    with engine.db.snapshot() as conn:
        turns = [r[0] for r in conn.execute("SELECT user_text FROM session_turns WHERE session_id=? ORDER BY rowid",
                                            (personal,))]
    assert turns == [redacted for _, _, _, redacted in WALK]
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())  # the rule extractor distils the (redacted) turns
    drain(engine)
    assert not [m.body for m in engine.list_memories(personal) if any(v in m.body for v in VALUES)]
    engine.close()
    raw = database_bytes(home)
    assert [v for v in VALUES if v.encode() in raw] == []


def test_the_llm_write_path_never_stores_a_stated_credential(llm_engine, provider, clock, home):
    session = llm_engine.open_session("personal", "work")
    # the observer's model restates each sentence as a memory, the value in it
    provider.script(OBSERVER, json.dumps({"proposals": [
        {"operation": "upsert_document", "memoryClass": "durable_fact", "subjectKind": "user",
         "anchor": {"canonicalName": f"account-{i}", "anchorType": "project"}, "title": f"Account {i}",
         "content": "User's " + sentence.split(" ", 1)[1], "aliases": ["account"], "facets": ["project"],
         "confidence": 0.9}
        for i, (sentence, _, _, _) in enumerate(WALK)]}))
    provider.default = "CREATE"
    for sentence, _, _, _ in WALK:
        llm_engine.add_turn(session, user=sentence, assistant="Noted.")
    clock.advance(120_000)
    run = llm_engine.writepath.observer.distill(session, clock(), "idle")
    assert run.status == "completed" and run.checkpoint_ids == ()
    drain(llm_engine)
    assert llm_engine.list_memories(session) == []
    sent = json.dumps(provider.calls(OBSERVER))
    assert [v for v in VALUES if v in sent] == []  # the turns the model read were redacted
    llm_engine.close()
    raw = database_bytes(home)
    assert [v for v in VALUES if v.encode() in raw] == []
