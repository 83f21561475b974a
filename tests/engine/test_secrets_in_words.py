"""Credentials said in plain words are secrets; prose about passwords, PINs and tokens is not.

The sentences are templates and every value is made at run time by a seeded generator (no
credential-shaped literal in the repository).
"""

from __future__ import annotations

import random
import string

import pytest

from keepmind.engine.secretfilter import MARKER, redact, secret_kinds
from support.secret_corpus import ALNUM, HEX, chosen_password, words

RNG = random.Random(20261202)


def digits(n: int):
    return lambda: "".join(RNG.choice(string.digits) for _ in range(n))


def drawn(alphabet: str, n: int):
    return lambda: "".join(RNG.choice(alphabet) for _ in range(n))


def word_with_digits():
    return words(1, RNG)[0] + digits(2)()


def mixed_case_letters():
    """Letters only, with capitals inside as a generated password has and a word does not."""
    chars = [RNG.choice(string.ascii_lowercase) for _ in range(7)] + [RNG.choice(string.ascii_uppercase) for _ in range(3)]
    RNG.shuffle(chars)
    return "".join(chars)


def spaced(n: int) -> str:
    return " ".join(words(n, RNG))


def hyphenated(n: int) -> str:
    return "-".join(words(n, RNG))


def word_not_a_participle():
    """One made-up word that ends in no "-ed", "-ly" or "-ing" (before "and" those read as prose)."""
    return words(1, RNG)[0] + "o"


def aws_secret():
    """40 characters of [A-Za-z0-9/+], as AWS prints a secret access key."""
    return drawn(ALNUM + "/+", 40)()


SAID = [
    ("stated_password", "my ssh password for the server is {v}", lambda: chosen_password(RNG)),
    ("stated_password", "password for wifi: {v}", word_with_digits),
    ("stated_password", "my login is bob and password {v}", lambda: chosen_password(RNG)),
    ("stated_password", "{v} is my wifi password", word_with_digits),
    ("stated_password", "the passphrase '{v}'", lambda: "-".join(words(2, RNG)) + "-" + digits(2)()),
    ("stated_password", "the wifi password is '{v}'", lambda: " ".join(words(4, RNG))),
    ("stated_password", "the wifi password is \u201c{v}\u201d", lambda: " ".join(words(4, RNG))),
    ("stated_password", "my pw is {v}", word_with_digits),
    ("stated_password", "my password is currently {v}", word_with_digits),
    ("stated_password", "The router password was changed to {v} last week.", lambda: chosen_password(RNG)),
    ("stated_password", "fyi my password is {v} for the router", mixed_case_letters),
    # a password said in several words, or hyphenated ones, whatever each word looks like alone
    ("stated_password", "My wifi password is {v}.", lambda: hyphenated(4)),
    ("stated_password", "My wifi password is {v} and I love hiking on Sundays.", lambda: hyphenated(4)),
    ("stated_password", "My laptop password is {v}", lambda: spaced(3)),
    ("stated_password", "The password to the garage wifi is {v} for now", lambda: spaced(3)),
    ("stated_password", "The router passphrase was changed to {v} last week.", lambda: spaced(4)),
    ("stated_password", "Password: {v}", lambda: spaced(3)),
    ("stated_password", "the passphrase {v}", lambda: hyphenated(3)),
    ("stated_password", "my wifi password is {v} and I love hiking", word_not_a_participle),
    # a login said as user and password: only the password is the value
    ("stated_login", "My Netflix login is bob@example.com / {v}", lambda: chosen_password(RNG)),
    ("stated_login", "log in with admin / {v}", lambda: chosen_password(RNG)),
    ("stated_login", "The router login is admin:{v}", word_with_digits),
    ("stated_login", "My credentials for the NAS are root / {v}.", word_with_digits),
    ("stated_login", "username and password are bob / {v}", lambda: chosen_password(RNG)),
    ("stated_pin", "My bank PIN is {v}", digits(4)),
    ("stated_pin", "PIN: {v}", digits(4)),
    ("stated_pin", "the PIN for my debit card is {v}.", digits(4)),
    ("stated_pin", "my PIN number is {v}", digits(6)),
    ("stated_pin", "The gate code is {v}, press the bell after.", digits(5)),
    ("stated_pin", "the CVV is {v}", digits(3)),
    ("stated_pin", "{v} is my PIN", digits(4)),
    ("stated_token", "the api token is {v}", drawn(HEX, 32)),
    ("stated_token", "the access token for prod is {v}.", drawn(ALNUM, 36)),
    ("stated_token", "The signing key for staging is now {v}", drawn(ALNUM + "_-", 32)),
    ("stated_token", "api key {v} for the weather service", drawn(HEX, 40)),
    ("aws_secret_access_key", "{v}", aws_secret),
    ("aws_secret_access_key", "Here is the new key:\n{v}\nthanks", aws_secret),
    ("aws_secret_access_key", "the secret access key {v}", aws_secret),
    ("recovery_code", "my 2FA backup codes are {v}", lambda: ", ".join(f"{digits(4)()}-{digits(4)()}" for _ in range(3))),
    ("recovery_code", "GitHub recovery codes:\n{v}", lambda: "\n".join(f"{drawn(HEX, 5)()}-{drawn(HEX, 5)()}" for _ in range(4))),
    ("recovery_code", "the recovery key is {v}", lambda: "-".join(digits(6)() for _ in range(8))),
    ("security_answer", "my security answer is {v}", lambda: words(1, RNG)[0].capitalize()),
    ("security_answer", "the answer to my security question is '{v}'", lambda: words(1, RNG)[0]),
    ("seed_phrase", "my seed phrase is {v}", lambda: " ".join(words(12, RNG))),
    ("seed_phrase", "Recovery phrase: {v}", lambda: " ".join(words(24, RNG))),
]


@pytest.mark.parametrize(("kind", "template", "value"), SAID, ids=[t for _, t, _ in SAID])
def test_a_credential_said_in_words_is_found_and_only_its_value_is_redacted(kind, template, value):
    for _ in range(20):  # twenty draws of the value, the sentence around it the same
        sentence = template.format(v=value())
        redacted, kinds = redact(sentence)
        assert kind in kinds, sentence
        assert redacted == template.format(v=MARKER)


# Each of these was refused by the old "password is <anything>" rule: a memory lost for nothing.
@pytest.mark.parametrize("text", [
    "my password is expired",
    "My work password is stored in the vault.",
    "My password is Bitwarden-managed.",
    "The API key is stored in 1Password.",
    "The API key is OAuth2-based.",
    "my password is weak",
    "The secret key is rotated by the platform team.",
])
def test_an_english_word_after_password_is_is_prose_not_a_secret(text):
    assert secret_kinds(text) == []


@pytest.mark.parametrize("text", [
    "The password is 8 characters long.", "The password is 16-digit on that router.", "The PIN is 4 digits.",
    "The token is 128000 tokens long.", "The API key is 32 characters.", "The pin is 2 mm wide.",
    "He asked what the passphrase policy means.", "1Password is my password manager.",
    "The recovery code is 8 digits long.", "The security answer is case-sensitive.",
    "My seed phrase is written on paper and kept in a safe in the basement.",
    "The error code is 5003 and the zip code is 02139.", "The fix landed in commit " + "ab12" * 10 + " on main.",
])
def test_numbers_units_and_ids_near_a_credential_word_are_not_a_value(text):
    assert secret_kinds(text) == []


def test_a_said_pin_is_blocked_by_kind_and_redacted_from_the_turn(engine):
    sid = engine.open_session("personal", "work")
    sentence = f"My bank PIN is {digits(4)()}"
    result = engine.store_memory(sid, "Bank", sentence)
    assert (result.action, result.reason) == ("blocked", "secret-like content is never stored (a PIN)")
    engine.add_turn(sid, user=sentence, assistant="I will not keep that.")
    with engine.db.snapshot() as conn:
        turns = conn.execute("SELECT user_text FROM session_turns WHERE session_id=?", (sid,)).fetchall()
    assert turns == [(f"My bank PIN is {MARKER}",)]


@pytest.mark.parametrize("text,value", [
    ("my wifi password is sunshine", "sunshine"),
    ("Password: dragonfly.", "dragonfly"),
    ("The wifi password is swordfish, the network is Home5G.", "swordfish"),
    ("my router password was admin", "admin"),
    ("my wifi password is password", "is password"),  # a credential word said, not assigned
])
def test_a_single_word_said_as_the_whole_password_is_a_secret(text, value):
    redacted, kinds = redact(text)
    assert kinds and value not in redacted


@pytest.mark.parametrize("text", [
    "My password is secure.", "my password is long", "My password is different for every site.",
    "Is my password correct?", "The password is none.", "password = None",
])
def test_a_word_for_a_passwords_state_is_prose(text):
    assert secret_kinds(text) == []


# Prose about a password, a login or credentials, with several words (or hyphenated ones) after
# "is": each is a memory to keep, not a password said in words.
@pytest.mark.parametrize("text", [
    "My password manager is 1Password.", "I changed my password yesterday.",
    "The password policy requires 12 characters.", "I forgot my Netflix password again",
    "Password resets go through the IT portal.", "My password is up-to-date.", "The password is state-of-the-art.",
    "The password is case sensitive.", "Passwords are rotated quarterly.", "My password is pretty weak.",
    "My password is kind of weak.", "The password is kept server side.", "The password is 16 characters long.", "The password is lowercase letters only.",
    "The password is randomly generated by the system.", "The password is machine generated.",
    "My password is Bitwarden managed.", "My password is hashed server side.", "My password is hashed and salted.",
    "The password is handled and rotated by IT.", "The password is something I made up.",
    "The master password is never sent to the server.", "The wifi password is written on the fridge.",
    "The password is expiring soon.", "My password is Bitwarden-managed and long.",
    "The password is hard coded in the old app.", "My password is still the default one.",
    "My password is currently being reset.", "The password is currently stored in plain text.",
])
def test_several_words_after_password_is_that_are_prose_are_not_a_secret(text):
    assert secret_kinds(text) == []


# A login said with one value names a user name or how logging in goes: never a password. A pair
# whose halves name the fields, a time, an address or two providers is no login either.
@pytest.mark.parametrize("text", [
    "My login is slow today", "My login is bob@example.com", "My login is my email address.", "Login is via SSO.",
    "Login is email/password or Google.", "Login is email / password or SSO.", "The login is at 10:30am tomorrow.",
    "The login page is example.com/signin.", "Login is https://example.com/login for staff.",
    "My login is Google/Apple depending on the device.", "Log in with SSO/SAML only.", "I log in with Face ID.",
    "My credentials are stored in the vault.", "My credentials are the same as yours.",
    "My AWS credentials are in ~/.aws/credentials.", "Credentials are rotated monthly.", "The credentials are expired.",
    "The user/password form is on the left.", "Username and password are required fields.",
    "Login 2/3 failed because of the network.",
])
def test_a_login_said_without_a_password_is_not_a_secret(text):
    assert secret_kinds(text) == []
