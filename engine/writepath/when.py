"""Relative days in what a user says, anchored to the day they said it.

"I'm flying to Berlin next Friday." learnt on Thursday 3 December reads wrong a week later: the
memory says "next Friday (11 December 2026)" instead, its own words kept and the day added, so a
later recall ("When is my Berlin flight?") and a person reading it both know which Friday. Only
forms that name one day or one week are anchored (today, tonight, tomorrow, yesterday, the day
after tomorrow, this/next/last <weekday>, on <weekday>, next/last week, this weekend, next month,
in N days or weeks); "on Fridays" and "every Friday" are habits, and "in a few days" names no day:
they stay as they are. "Next Friday" said in the week of a Friday still to come is the one after
it ("this Friday" is the coming one); the day is written out, so whoever reads it can tell.

The day is the user's: the turn's time in this machine's local time zone (Keepmind runs on the
user's own machine), unless a zone is given.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, tzinfo

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "ten": 10}
_WEEKDAY = r"(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_RELATIVE = re.compile(
    r"\b(?:"
    r"(?P<after>the\s+day\s+after\s+tomorrow)|"
    r"(?P<word>today|tonight|tomorrow|yesterday)|"
    rf"(?P<which>this|next|last|coming|on)\s+{_WEEKDAY}(?!s)|"
    r"(?P<week>next|last|this)\s+week(?!s|end)|"
    r"(?P<weekend>this|next)\s+weekend|"
    r"(?P<month>next|last)\s+month|"
    r"in\s+(?P<n>\d{1,2}|a|an|one|two|three|four|five|six|seven|ten)\s+"
    r"(?P<unit>days?|weeks?)"
    r")\b(?!\s*\()", re.I)


def _day_words(d: date) -> str:
    return f"{WEEKDAYS[d.weekday()].capitalize()} {d.day} {d.strftime('%B')} {d.year}"


def _one_day(d: date) -> tuple[str, date]:
    return _day_words(d), d


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _resolve(m: re.Match, today: date, after: date | None = None) -> tuple[str, date | None] | None:
    """The day (or week, or month) a relative form names, in words, with the day when it names one
    day; None when it names none.

    `after`: a later day the text named before this form; "on <weekday>" then counts from it ("I'm
    flying to Lisbon next Friday, back on Sunday." is back on the Sunday after that Friday)."""
    if m.group("after"):
        return _one_day(today + timedelta(days=2))
    word = (m.group("word") or "").lower()
    if word in ("today", "tonight"):
        return _one_day(today)
    if word == "tomorrow":
        return _one_day(today + timedelta(days=1))
    if word == "yesterday":
        return _one_day(today - timedelta(days=1))
    if m.group("which"):
        which, target = m.group("which").lower(), WEEKDAYS.index(m.group("day").lower())
        if which == "last":
            back = (today.weekday() - target) % 7 or 7
            return _one_day(today - timedelta(days=back))
        base = after if (which == "on" and after is not None and after > today) else today
        ahead = (target - base.weekday()) % 7 or 7  # the first such day after today (or after `after`)
        if which == "next" and today.weekday() + ahead <= 6:
            ahead += 7  # "next Friday" said on a Thursday is next week's, not tomorrow ("this Friday" is)
        return _one_day(base + timedelta(days=ahead))
    if m.group("week"):
        shift = {"next": 7, "last": -7, "this": 0}[m.group("week").lower()]
        return f"the week of {_day_words(_monday(today) + timedelta(days=shift))}", None
    if m.group("weekend"):
        # this weekend: the coming Saturday, or the one that began yesterday when said on a Sunday
        saturday = today - timedelta(days=1) if today.weekday() == 6 else today + timedelta(days=5 - today.weekday())
        if m.group("weekend").lower() == "next":
            saturday += timedelta(days=7)
        sunday = saturday + timedelta(days=1)
        if sunday.month != saturday.month:
            return f"the weekend of {_day_words(saturday)}", None
        return f"the weekend of {saturday.day}–{sunday.day} {saturday.strftime('%B')} {saturday.year}", None
    if m.group("month"):
        first = today.replace(day=1)
        other = (first + timedelta(days=32)).replace(day=1) if m.group("month").lower() == "next" \
            else (first - timedelta(days=1)).replace(day=1)
        return f"{other.strftime('%B')} {other.year}", None
    if m.group("n"):
        raw = m.group("n").lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        days = n * (7 if m.group("unit").lower().startswith("week") else 1)
        return _one_day(today + timedelta(days=days))
    return None


def anchored(text: str, said_at_ms: int | None, tz: tzinfo | None = None) -> str:
    """`text` with each relative day it names followed by that day, as of `said_at_ms` (a Unix time
    in ms; None: the text as it is). A form already followed by a parenthesis is left alone."""
    if not text or said_at_ms is None:
        return text
    said = datetime.fromtimestamp(said_at_ms / 1000, tz=tz) if tz is not None \
        else datetime.fromtimestamp(said_at_ms / 1000).astimezone()
    today = said.date()

    latest: list[date] = []

    def add(m: re.Match) -> str:
        found = _resolve(m, today, latest[-1] if latest else None)
        if found is None:
            return m.group(0)
        words, day = found
        if day is not None:
            latest.append(day)
        return f"{m.group(0)} ({words})"

    return _RELATIVE.sub(add, text)
