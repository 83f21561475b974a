"""Recall on long input: a long message or recent turns (a pasted log of names) is planned in linear
time and on at most MAX_MESSAGE_CHARS of context, and a normal message is planned as before.

A user walk found every recall taking 6.5-8.9 s for three turns after a 199,000-character paste:
the plan read all of it, with list membership tests that made it quadratic. These tests assert what
is planned, never how long it takes.
"""

from __future__ import annotations

import random

import pytest

from keepmind.engine.recall import MAX_MESSAGE_CHARS, cut_context, cut_redacted
from keepmind.engine.recall.plan import (
    _NOT_ANCHORS,
    CAPITALIZED_RE,
    MAX_ANCHORS,
    MAX_TERMS,
    anchor_hints,
    asks_for_help,
    content_stems,
    content_words,
    plan,
    segments,
)
from keepmind.engine.recall.stem import stem
from keepmind.engine.secretfilter import MARKER, redact_text

# -- the algorithm before the fix, kept here as the reference the new one must agree with ----------


def _old_anchor_hints(text):
    out = []
    for word in CAPITALIZED_RE.findall(text or ""):
        low = word.lower()
        if low not in _NOT_ANCHORS and low not in out:
            out.append(low)
    return out


def _old_content_stems(text):
    out = []
    for word in content_words(text):
        s = stem(word)
        if s not in out:
            out.append(s)
    return out


def _old_one(message, context):
    words = content_words(message)
    anchors = _old_anchor_hints(message)
    for turn in context or ():
        for hint in _old_anchor_hints(turn):
            if hint not in anchors:
                anchors.append(hint)
    distinct = []
    for w in words:
        if w not in distinct:
            distinct.append(w)
    first = [w for w in distinct if w in anchors]
    rest = sorted((w for w in distinct if w not in anchors), key=lambda w: (-len(w), distinct.index(w)))
    return {"query": message, "terms": tuple((first + rest)[:MAX_TERMS]),
            "content": tuple(_old_content_stems(message)), "anchors": tuple(anchors)[:MAX_ANCHORS],
            "task": asks_for_help(message)}


def _old_plan(message, context=()):
    return {**_old_one(message, context), "parts": tuple(_old_one(s, context) for s in segments(message))}


def _fields(p):
    return {"query": p.query, "terms": p.terms, "content": p.content, "anchors": p.anchors, "task": p.task,
            "parts": tuple({k: v for k, v in _fields(x).items() if k != "parts"} for x in p.parts)}


NORMAL = [
    ("Where is my kayak kept?", []),
    ("Ok, can you tell me what that thing about the Berlin marathon was?", []),
    ("What coffee should I get this afternoon? Also, I just adopted a greyhound named Pixel.", []),
    ("tell me about lisbon and the architect", ["My sister Maya moved to Lisbon.", "Maya works as an Architect."]),
    ("Book me a flight to Berlin next week. Maya said Lufthansa is cheaper than Ryanair in March!",
     ["Hello", "We talked about Berlin, Lisbon and Porto yesterday", "Porto? Lisbon. Berlin!"]),
    ("painted painting paints painter pint pine pines: which of Anna's paintings did Anna paint?",
     ["Anna Anna ANNA anna", ""]),
    ("", ["Lisbon"]),
    ("Thanks! Also: what did Dr Okafor say about my knee? And the physio in Leeds, when is it?\nOk.",
     ["Okafor", "Leeds Okafor Leeds"]),
]


@pytest.mark.parametrize("message,context", NORMAL)
def test_the_plan_is_the_one_the_old_algorithm_made(message, context):
    assert _fields(plan(message, context)) == _old_plan(message, context)
    assert anchor_hints(message) == _old_anchor_hints(message)
    assert content_stems(message) == _old_content_stems(message)


def test_the_plan_agrees_with_the_old_algorithm_on_random_messages():
    # Ties in length, repeated words, names in the message and in the context, several sentences.
    rnd = random.Random(20)
    vocab = ["kayak", "garage", "Lisbon", "maya", "Maya", "berlin", "Berlin", "marathon", "oat", "milk",
             "flat", "whites", "the", "my", "is", "where", "ThinkPad", "Fedora", "painted", "painting",
             "Ok", "Thanks", "dentist", "Elm", "street", "clinic", "march", "March", "sister", "architect"]
    for _ in range(200):
        def text(n):
            return " ".join(rnd.choice(vocab) + rnd.choice(["", "", "", ".", "?", "!", ","]) for _ in range(n))
        message = text(rnd.randint(0, 40))
        context = [text(rnd.randint(0, 30)) for _ in range(rnd.randint(0, 4))]
        assert _fields(plan(message, context)) == _old_plan(message, context), (message, context)


# -- the context recall plans with is cut like the message -------------------------------------------


def _names(prefix: str, chars: int) -> str:
    """Capitalised words, each a distinct anchor hint (Prefixaaa Prefixaab ...), `chars` long."""
    words, size, i = [], 0, 0
    while size < chars:
        n, letters = i, ""
        for _ in range(4):
            n, r = divmod(n, 26)
            letters = chr(97 + r) + letters
        words.append(f"{prefix}{letters}")
        size += len(words[-1]) + 1
        i += 1
    return " ".join(words)[:chars]


PASTE = _names("Name", 199_000)  # a pasted log of names, as in the user walk
QUESTION = "Where is my kayak kept?"


def test_cut_context_keeps_the_start_of_each_text_and_serves_the_newest_first():
    a, b, c = "A" * 15_000, "B" * 15_000, "C" * 15_000
    # The session's turns come newest first: the newest whole, the next cut, the oldest dropped.
    assert cut_context([a, b, c], newest_first=True) == [a, b[:5_000]]
    # A caller's context comes newest last (the last six are kept): the same, from the other end.
    assert cut_context([a, b, c], newest_first=False) == [b[:5_000], c]
    assert cut_context([PASTE], newest_first=False) == [PASTE[:MAX_MESSAGE_CHARS]]
    assert cut_context([PASTE[:MAX_MESSAGE_CHARS]], newest_first=True) == [PASTE[:MAX_MESSAGE_CHARS]]
    normal = ["We talked about Lisbon yesterday", "", "Maya lives there"]
    assert cut_context(normal, newest_first=True) == cut_context(normal, newest_first=False) == normal
    assert cut_context([], newest_first=True) == []


def _recall_plan(engine, session, message, context=None):
    result = engine.recall(session, message, context)
    return engine.explain(result.receipt_id)["plan"]


def test_a_long_context_is_planned_as_its_first_max_message_chars(engine):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Kayak", "The user's kayak is kept in the garage at the lake house.")
    got = _recall_plan(engine, sid, QUESTION, context=PASTE)
    cut = plan(QUESTION, [PASTE[:MAX_MESSAGE_CHARS]])
    assert got == {"terms": list(cut.terms), "anchors": list(cut.anchors), "content": list(cut.content)}
    # ...and at most MAX_ANCHORS of the paste's names are kept (a receipt had 1,600), in their order
    assert len(anchor_hints(PASTE[:MAX_MESSAGE_CHARS])) > 5 * MAX_ANCHORS
    assert got["anchors"] == anchor_hints(QUESTION + " " + PASTE[:MAX_MESSAGE_CHARS])[:MAX_ANCHORS]


def test_a_long_recent_turn_is_cut_and_the_turns_share_one_cap(engine):
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Kayak", "The user's kayak is kept in the garage at the lake house.")
    oldest, middle, newest = _names("Old", 15_000), _names("Mid", 15_000), PASTE
    for text in (oldest, middle, newest):
        engine.add_turn(sid, user=text, assistant="Noted.")
    got = _recall_plan(engine, sid, QUESTION)  # context: the last three user turns, newest first
    assert got["anchors"] == list(plan(QUESTION, [newest[:MAX_MESSAGE_CHARS]]).anchors)
    # A short turn after the paste: it is whole, and the paste gets what it leaves of the cap.
    short = "Maya borrowed it in Porto."
    engine.add_turn(sid, user=short, assistant="Noted.")
    got = _recall_plan(engine, sid, QUESTION)
    expected = plan(QUESTION, [short, newest[:MAX_MESSAGE_CHARS - len(short)]])
    assert got["anchors"] == list(expected.anchors) and got["anchors"][:2] == ["maya", "porto"]
    assert not any(a.startswith(("mid", "old")) for a in got["anchors"])


def test_short_recent_turns_are_planned_whole(engine):
    sid = engine.open_session("personal", "work")
    turns = ["My sister Maya moved to Lisbon.", "We went to Porto with Ines last May."]
    for text in turns:
        engine.add_turn(sid, user=text, assistant="Noted.")
    message = "tell me about lisbon and porto"
    got = _recall_plan(engine, sid, message)
    expected = plan(message, list(reversed(turns)))  # newest first, as before
    assert got == {"terms": list(expected.terms), "anchors": list(expected.anchors),
                   "content": list(expected.content)}
    assert got["terms"][:2] == ["lisbon", "porto"]  # named in the recent turns: searched first
    caller = ["Ines and Maya", "Lisbon, not Porto"]
    got = _recall_plan(engine, sid, message, context=caller)
    assert got["anchors"] == list(plan(message, caller).anchors)


def test_a_secret_the_cut_would_split_is_still_redacted(engine):
    # A caller's context is redacted whole, then cut: what is planned holds no part of the key.
    sid = engine.open_session("personal", "work")
    key = "AKIA" + "QZ7PL3MX" * 2  # an access key id; its first nine characters fall inside the cap
    context = PASTE[:MAX_MESSAGE_CHARS - 10] + " " + key + " tail"
    assert redact_text(context[:MAX_MESSAGE_CHARS]).endswith(key[:9])  # cut first, the rest is not seen
    got = _recall_plan(engine, sid, QUESTION, context=context)
    assert got["anchors"] and not any(a.startswith("akia") for a in got["anchors"])


def test_a_secret_across_the_cut_of_the_message_is_kept_in_no_part(engine):
    # The message too is redacted before it is cut: the receipt stored the key's first nine characters.
    sid = engine.open_session("personal", "work")
    key = "AKIA" + "QZ7PL3MX" * 2
    message = "where is my kayak " * 1200
    message = message[:MAX_MESSAGE_CHARS - 10] + " " + key + " tail"
    assert redact_text(message[:MAX_MESSAGE_CHARS]).endswith(key[:9])  # cut first, the rest is not seen
    receipt = engine.explain(engine.recall(sid, message).receipt_id)
    assert key[:9] not in receipt["query"] and len(receipt["query"]) <= MAX_MESSAGE_CHARS
    assert receipt["query"].startswith("where is my kayak")
    # a key wholly inside the cut is the marker, as before; the cut never leaves a piece of the marker
    inside = message[:MAX_MESSAGE_CHARS - 40] + " " + key + " tail"
    assert cut_redacted(inside).endswith(MARKER + " tail") and key not in cut_redacted(inside)
    assert not cut_redacted(message).endswith(MARKER[:5]) and MARKER[:3] not in cut_redacted(message)[-20:]


@pytest.mark.offline_model
def test_a_pasted_log_in_the_last_turn_still_lets_the_answer_through(model_engine):
    sid = model_engine.open_session("personal", "work")
    kayak = model_engine.store(sid, "Kayak", "The user's kayak is kept in the garage at the lake house.").id
    model_engine.store(sid, "Coffee", "The user drinks oat-milk flat whites every morning.")
    model_engine.add_turn(sid, user=PASTE, assistant="That is a long list of names.")
    result = model_engine.recall(sid, QUESTION)
    receipt = model_engine.explain(result.receipt_id)
    assert receipt["mode"] == "hybrid" and [i.id for i in result.items] == [kayak]
    assert receipt["plan"]["anchors"] == list(plan(QUESTION, [PASTE[:MAX_MESSAGE_CHARS]]).anchors)
