"""The overview's counts say what they count: a walk read "Recalled today 3" beside two listed
recalls (it summed the memories the recalls injected)."""

from __future__ import annotations

import re
import time


def test_recalls_today_counts_the_recalls_listed_and_says_the_memories_they_injected(server, browser, clock):
    clock.now = int(time.time() * 1000)  # "today" is the wall clock's day
    eng = server.engine
    sid = eng.open_session("personal", "work")
    eng.store(sid, "Anna lives in Lisbon", "The user's sister Anna lives in Lisbon.")
    eng.store(sid, "Anna's flat", "Anna's flat in Lisbon has a balcony.")
    eng.store(sid, "Anna works at Acme", "Anna works at Acme in Lisbon.")
    first = eng.recall(sid, "where does Anna live in Lisbon?")
    second = eng.recall(eng.open_session("personal", "work"), "what about Anna's balcony in Lisbon?")
    injected = sum(len(r.items) for r in (first, second))
    assert injected > 2  # the walk's case: more memories injected than recalls made
    web, _ = browser
    page = " ".join(re.sub(r"<[^>]+>", " ", web.get("/").text).split())
    assert f"Recalls today 2 {injected} memories injected" in page
    assert "Recalled today" not in page
    assert page.count("· injected") == 2  # the two recalls the count speaks of, listed
