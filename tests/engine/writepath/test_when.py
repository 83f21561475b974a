"""Relative days anchored to the day they were said (when.anchored), and through the observer."""

from datetime import datetime, timedelta, timezone

import pytest

from keepmind.engine.clock import HOUR_MS
from keepmind.engine.writepath.when import anchored
from support.provider import drain

THURSDAY = int(datetime(2026, 12, 3, 15, 0, tzinfo=timezone.utc).timestamp() * 1000)


@pytest.mark.parametrize("said, anchored_as", [
    ("I'm flying to Berlin next Friday.", "I'm flying to Berlin next Friday (Friday 11 December 2026)."),
    ("This Friday we party.", "This Friday (Friday 4 December 2026) we party."),
    ("Next Monday I start.", "Next Monday (Monday 7 December 2026) I start."),
    ("The dentist is tomorrow at 9.", "The dentist is tomorrow (Friday 4 December 2026) at 9."),
    ("Yesterday I ran 10k.", "Yesterday (Wednesday 2 December 2026) I ran 10k."),
    ("Last Tuesday I met Tom.", "Last Tuesday (Tuesday 1 December 2026) I met Tom."),
    ("The party is on Saturday.", "The party is on Saturday (Saturday 5 December 2026)."),
    ("See you the day after tomorrow.", "See you the day after tomorrow (Saturday 5 December 2026)."),
    ("My sister visits this weekend.", "My sister visits this weekend (the weekend of 5–6 December 2026)."),
    ("I start the new job next week.", "I start the new job next week (the week of Monday 7 December 2026)."),
    ("The lease ends next month.", "The lease ends next month (January 2027)."),
    ("I fly out in 2 weeks.", "I fly out in 2 weeks (Thursday 17 December 2026)."),
    # habits and vague spans name no day; a day already given is not given twice
    ("I go swimming on Fridays.", "I go swimming on Fridays."),
    ("We release every Friday.", "We release every Friday."),
    ("I fly out in a few days.", "I fly out in a few days."),
    ("I had lunch today (with Tom).", "I had lunch today (with Tom)."),
    # "on <weekday>" after a later day counts from it: back on the Sunday after that Friday (a walk
    # read "next Friday (11 December), back on Sunday (6 December)")
    ("I'm flying to Lisbon next Friday, back on Sunday.",
     "I'm flying to Lisbon next Friday (Friday 11 December 2026), back on Sunday (Sunday 13 December 2026)."),
    ("I see Anna on Sunday and fly out next Friday.",
     "I see Anna on Sunday (Sunday 6 December 2026) and fly out next Friday (Friday 11 December 2026)."),
])
def test_a_relative_day_is_followed_by_the_day_it_names(said, anchored_as):
    assert anchored(said, THURSDAY, timezone.utc) == anchored_as


def test_the_day_is_the_users_where_they_said_it():
    late = THURSDAY + 9 * HOUR_MS  # 00:00 UTC on Friday, still Thursday evening in New York
    assert anchored("tomorrow", late, timezone.utc) == "tomorrow (Saturday 5 December 2026)"
    assert anchored("tomorrow", late, timezone(timedelta(hours=-5))) == "tomorrow (Friday 4 December 2026)"


def test_the_observer_learns_a_plan_with_its_day_and_a_standing_statement_as_said(engine, personal, clock):
    clock.advance(12 * HOUR_MS)  # noon on Thursday 1 January 2026: the same day in any nearby zone
    engine.add_turn(personal, user="I'm flying to Berlin next Friday.", assistant="Noted.")
    engine.add_turn(personal, user="Starting tomorrow I'm vegan.", assistant="Noted.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    drain(engine)
    bodies = {m.body for m in engine.list_memories(personal)}
    assert "User is flying to Berlin next Friday (Friday 9 January 2026)." in bodies
    assert "Starting tomorrow I'm vegan." in bodies  # dated, it would read as an episode, not a diet


def test_this_weekend_said_on_a_sunday_is_the_one_under_way():
    sunday = THURSDAY + 3 * 24 * HOUR_MS
    assert anchored("this weekend", sunday, timezone.utc) == "this weekend (the weekend of 5–6 December 2026)"
    assert anchored("next weekend", sunday, timezone.utc) == "next weekend (the weekend of 12–13 December 2026)"
