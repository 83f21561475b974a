"""Profiles: durable facts sharing a `*_profile` facet join a kept member, inside the budgets."""

from keepmind.engine import search
from keepmind.engine.recall.profiles import companions, profile_facets
from keepmind.engine.recall.rank import Candidate, Ranked


def _r(mid: str, facets: str, memory_class: str = "durable_fact") -> Ranked:
    return Ranked(Candidate(mid, {"title": mid, "body": mid, "facets": facets, "memory_class": memory_class},
                            0.5, 0.0), 0.5, ())


def test_profile_facets_are_the_durable_facts_facets_ending_in_profile():
    assert profile_facets(_r("a", "travel_profile\nairport").candidate.row) == ("travel_profile",)
    assert profile_facets(_r("a", "Travel_Profile").candidate.row) == ("travel_profile",)
    assert profile_facets(_r("a", "airport\nprofile-picture").candidate.row) == ()
    assert profile_facets(_r("a", "travel_profile", "evidence").candidate.row) == ()
    assert profile_facets({"memory_class": "durable_fact", "facets": ["pet_profile"]}) == ("pet_profile",)


def _members(*ranked: Ranked):
    """A stand-in for the store read: the rows carrying the facet, in the given (newest-first) order."""
    rows_ = [r.candidate.row | {"id": r.id} for r in ranked]
    return lambda facet: [row for row in rows_ if facet in row["facets"].split("\n")]


def test_members_of_a_kept_items_profile_join_closest_first_and_nothing_else_does():
    airport = _r("airport", "travel_profile\nairport")
    store = _members(airport, _r("seat", "seat\ntravel_profile"), _r("diet", "food_profile"),
                     _r("airline", "travel_profile\nairline"), _r("trip", "travel_profile", "evidence"))
    cosines = {"seat": 0.1, "airline": 0.3, "trip": 0.9}
    joined = companions([airport], store, cosines.get)
    assert [(c.id, c.facet, c.joined) for c in joined] == [("airline", "travel_profile", "airport"),
                                                           ("seat", "travel_profile", "airport")]
    assert joined[0].reason == "shares the travel_profile profile with airport"
    assert joined[0].ranked.score == 0.3 and joined[0].ranked.reasons == ("profile:travel_profile",)
    # without cosines (lexical recall, no vectors yet) the store's order stands, after what the
    # ranking found, which keeps its score
    assert [c.id for c in companions([airport], store, lambda _: None)] == ["seat", "airline"]
    ranked_airline = Ranked(_r("airline", "travel_profile\nairline").candidate, 0.8, ("bm25=2.0",))
    joined = companions([airport], store, lambda _: None, [airport, ranked_airline])
    assert [c.id for c in joined] == ["airline", "seat"]
    assert joined[0].ranked.score == 0.8 and joined[0].ranked.reasons == ("bm25=2.0", "profile:travel_profile")


def test_nothing_kept_or_no_profile_kept_adds_nothing_and_reads_nothing():
    def members(facet):
        raise AssertionError("no profile kept: the store is not read")
    editor = _r("editor", "tools")
    assert companions([], members, lambda _: None) == []
    assert companions([editor], members, lambda _: None) == []
    # a kept evidence record carrying a profile facet does not pull the profile in either
    assert companions([_r("trip", "travel_profile", "evidence")], members, lambda _: None) == []


def test_each_member_joins_once_under_the_first_profile_it_shares():
    home = _r("home", "travel_profile\nhousehold_profile")
    store = _members(home, _r("keys", "household_profile\ntravel_profile"), _r("plants", "household_profile"))
    joined = companions([home], store, lambda _: None)
    assert [(c.id, c.facet) for c in joined] == [("keys", "travel_profile"), ("plants", "household_profile")]


def test_a_kept_profile_member_brings_its_profile_but_never_evidence_another_profile_or_scope(model_engine):
    engine = model_engine
    travel = engine.open_session("personal", "travel")
    other = engine.open_session("personal", "work")
    airport = engine.store(travel, "Home airport Boston Logan",
                           "The user's home airport is Boston Logan International (BOS).",
                           facets=["travel_profile", "airport"]).id
    airline = engine.store(travel, "Delta SkyMiles Gold membership",
                           "The user is a Delta SkyMiles Gold Medallion member and prefers Delta or KLM.",
                           facets=["travel_profile", "airline"]).id
    trip = engine.store(travel, "Amsterdam conference trip",
                        "Booked DL 48 from Boston to Amsterdam for the fintech conference.",
                        memory_class="evidence", facets=["travel_profile", "trip"]).id
    diet = engine.store(travel, "Vegetarian", "The user is vegetarian and orders vegetarian meals.",
                        facets=["food_profile"]).id
    elsewhere = engine.store(other, "Aisle seat", "The user always books an aisle seat on flights from Boston.",
                             facets=["travel_profile"]).id

    result = engine.recall(engine.open_session("personal", "travel"), "Which airport do I usually fly from?")
    receipt = engine.explain(result.receipt_id)
    injected = [i.id for i in result.items]
    kept = [d["id"] for d in receipt["gate"]["decisions"] if d["kept"]]
    assert receipt["gate"]["kind"] == "feature" and kept == [airport]
    assert injected == [airport, airline]
    assert receipt["companions"] == [{"id": airline, "facet": "travel_profile", "with": airport,
                                      "why": f"shares the travel_profile profile with {airport}"}]
    assert receipt["counts"]["companions"] == 1
    assert not {trip, diet, elsewhere} & set(injected)

    # a member the session was already given does not join again
    trace = engine.recaller.trace(engine.scope(travel), "Which airport do I usually fly from?",
                                  exclude=frozenset({airline}))
    assert [i.id for i in trace.injected] == [airport] and trace.companions == []

    # the session was given both: neither comes again, as a kept item or as a companion
    session = engine.open_session("personal", "travel")
    assert [i.id for i in engine.recall(session, "Which airport do I usually fly from?").items] == [airport, airline]
    assert engine.recall(session, "Which airport do I usually fly from?").items == []

    # nothing kept: nothing joins
    quiet = engine.recall(engine.open_session("personal", "travel"), "What is the boiling point of tungsten?")
    assert quiet.items == [] and quiet.block is None
    assert engine.explain(quiet.receipt_id)["companions"] == []


def test_facet_members_reads_the_exact_facet_through_the_visibility_predicate(engine, clock):
    travel, work = engine.open_session("personal", "travel"), engine.open_session("personal", "work")
    team = engine.open_session("team", "travel")
    a = engine.store(travel, "Airport", "Home airport BOS.", facets=["travel_profile"]).id
    b = engine.store(travel, "Airline", "Delta member.", facets=["airline", "Travel_Profile"]).id
    engine.store(travel, "Travel", "Likes to travel.", facets=["travel", "profile"])
    engine.store(travel, "Old", "Old profile.", facets=["travel_profile_2019"])
    engine.store(travel, "Trip", "Amsterdam trip.", memory_class="evidence", facets=["travel_profile"])
    engine.store(work, "Seat", "Aisle seat.", facets=["travel_profile"])
    t = engine.store(team, "Team travel", "Team books economy.", facets=["travel_profile"]).id
    scope = engine.scope(travel)
    with engine.db.snapshot() as conn:
        found = [r["id"] for r in search.facet_members(conn, scope, "travel_profile", clock(), 20)]
        assert sorted(found) == sorted([a, b, t])
        assert [r["id"] for r in search.facet_members(conn, scope, "travel_profile", clock(), 20,
                                                      exclude=frozenset({a}))] == [x for x in found if x != a]
        assert len(search.facet_members(conn, scope, "travel_profile", clock(), 1)) == 1
        assert [r["id"] for r in search.facet_members(conn, engine.scope(team), "travel_profile", clock(), 20)] == [t]
        assert search.facet_members(conn, scope, "pet_profile", clock(), 20) == []
