"""A diet bears on every task about food whatever the task's words (engine/bearing.py): "Suggest a
family dinner for tonight." gets "I'm gluten intolerant.", which shares no word with it and which
the embedder puts far from it. A walk's bakery owner got nothing for it, nor for a recipe."""

from __future__ import annotations

import json

import apsw
import pytest

from keepmind.engine import open_engine
from keepmind.engine.bearing import FLIGHT, FOOD, PETS, VEHICLE, bears_on, task_bears_on
from keepmind.engine.recall.inject import Injected, said_by_another
from keepmind.engine.recall.plan import content_stems
from keepmind.engine.settings import defaults
from support.stores import fill

# A walk: what a bakery owner told her assistant, said as an agent stores it.
BAKER = ["I'm gluten intolerant, which is ironic for a baker.", "I don't eat beef.",
         "I prefer short answers with bullet points.", "Always write emails to suppliers in a formal tone.",
         "User's son Kiran is 9 and plays football on Saturdays.", "User drives a 2015 Ford Transit for deliveries.",
         "User's husband Raj is a nurse and works night shifts.", "I love sourdough."]


@pytest.mark.parametrize("text", [
    "I'm gluten intolerant, which is ironic for a baker.", "I don't eat beef.", "I have a severe peanut allergy.",
    "I am vegan and avoid all animal products.", "My partner is vegan.", "I dislike spicy foods.",
    "I follow a low-FODMAP diet to manage digestive issues.", "I never drink alcohol.", "I have an allergy to coconut.",
    "I avoid caffeine in all forms.", "I stick to a strict keto diet and avoid high-carb foods.",
    "I'm an avid vegan and refuse to support anything that exploits animals.",
])
def test_what_limits_what_someone_eats_or_drinks_bears_on_food(text):
    assert bears_on(text) == FOOD


@pytest.mark.parametrize("text", [
    "I love sushi.",                                          # a liking: the gate decides about it
    "I hate doing the accounts.",
    "We ate pizza yesterday and I hated it.",                 # an episode
    "I avoid using any beauty products that are not cruelty-free and vegan.",   # a product, not a diet
    "I am allergic to penicillin.",                           # not eaten
    "I'm not allergic to shellfish.",
    "I'm no longer vegan.",
    "",
])
def test_what_does_not_limit_what_one_eats_bears_on_nothing(text):
    assert bears_on(text) is None


@pytest.mark.parametrize("message", [
    "Suggest a family dinner for tonight.", "What are some must-try local dishes in Tokyo?",
    "Plan the Thanksgiving menu.", "Find a restaurant near the office for a team lunch.",
    "What coffee shop should I go to?", "Healthy snack ideas for the kids' lunchboxes?",
])
def test_a_task_that_names_food_or_drink_is_a_food_task(message):
    assert task_bears_on(message, True) == FOOD


@pytest.mark.parametrize("message, task", [
    ("Make the main menu buttons bounce in when the scene loads.", True),   # an app's menu
    ("Add a menu bar to the app.", True),
    ("Write a limerick about coffee.", True),                               # writing about food
    ("How do I get red wine out of a carpet?", True),
    ("Plan a birthday party for my son.", True),
    ("What did Caroline cook for dinner last week?", False),                # a question about the past
])
def test_what_is_not_a_food_task(message, task):
    assert task_bears_on(message, task) is None


def _recall(engine, message, boundary="work"):
    result = engine.recall(engine.open_session("personal", boundary), message)
    return [i.content for i in result.items], engine.explain(result.receipt_id)


@pytest.fixture
def baker(model_engine):
    sid = model_engine.open_session("personal", "work")
    for text in BAKER:
        model_engine.store(sid, "", text)
    return model_engine


@pytest.mark.offline_model
@pytest.mark.parametrize("task", ["Suggest a family dinner for tonight.", "Suggest a recipe I could try at home."])
def test_a_food_task_gets_the_diet_it_shares_no_word_with(baker, task):
    injected, receipt = _recall(baker, task)
    assert {BAKER[0], BAKER[1]} <= set(injected) <= {BAKER[0], BAKER[1], "I love sourdough."}
    joined = {c["id"]: c for c in receipt["companions"]}
    assert {c["why"] for c in joined.values()} == {"bears on every food task"}
    diet = {i["id"] for i in receipt["injected"] if i["content"] in BAKER[:2]}
    assert diet <= set(joined) and len(diet) == 2  # the gate kept neither
    # an injected memory is not listed as dropped by the floor it was under
    assert not {d["id"] for d in receipt["dropped"]} & set(joined)
    assert receipt["counts"]["companions"] == 2 and "bearing_ms" in receipt["timings_ms"]
    # the receipt page says why each was injected: not "cleared every stage" (it was under the floor)
    view = {s["id"]: s for s in baker.receipt_view(receipt["receipt"])["stages"]}
    assert {view[i]["why"] for i in diet} == {"bears on every food task, whatever the gate said"}


@pytest.mark.offline_model
@pytest.mark.parametrize("message", ["Write a limerick about coffee.", "What is the capital of Peru?",
                                     "Make the main menu buttons bounce in when the scene loads."])
def test_what_is_not_a_food_task_gets_no_diet(baker, message):
    injected, receipt = _recall(baker, message)
    assert injected == [] and receipt["companions"] == []


@pytest.mark.offline_model
def test_a_diet_corrected_away_no_longer_bears_on_food(baker):
    scope = baker.scope(baker.open_session("personal", "work"))
    beef = next(m for m in baker.list_memories(scope, limit=50) if m.body == BAKER[1])
    baker.update(scope, beef.id, new_content="I eat anything these days.")
    injected, _ = _recall(baker, "Suggest a family dinner for tonight.")
    assert injected == [BAKER[0]]


@pytest.mark.offline_model
def test_a_diet_of_another_boundary_or_a_public_session_gives_nothing(baker):
    assert _recall(baker, "Suggest a family dinner for tonight.", boundary="home")[0] == []
    public = baker.open_session("public", "work")
    assert baker.recall(public, "Suggest a family dinner for tonight.").items == []


def _bearings(home):
    conn = apsw.Connection(str(home / "keepmind.db"))
    try:
        return dict(conn.execute("SELECT body, bears_on FROM memory_documents WHERE deleted_at IS NULL"))
    finally:
        conn.close()


def test_a_store_written_before_bearings_gets_them_from_the_migration(tmp_path, clock):
    home = tmp_path / "home"
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as engine:
        sid = engine.open_session("personal", "work")
        for text in BAKER:
            engine.store(sid, "", text)
    # What an older Keepmind left: no bearing worked out, migration 017 not run.
    conn = apsw.Connection(str(home / "keepmind.db"))
    conn.execute("DROP INDEX memory_documents_bears_on")
    conn.execute("ALTER TABLE memory_documents DROP COLUMN bears_on")
    conn.execute("DELETE FROM _migrations WHERE name='017_documents_bears_on'")
    conn.close()
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False):
        pass
    found = _bearings(home)
    assert {b: bearing for b, bearing in found.items() if bearing} == {BAKER[0]: FOOD, BAKER[1]: FOOD,
                                                                      BAKER[5]: VEHICLE}
    assert set(found) == set(BAKER)


def test_a_bearing_worked_out_by_older_rules_is_worked_out_again(tmp_path, clock):
    home = tmp_path / "home"
    turtles = "I'm allergic to turtles."
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False) as engine:
        sid = engine.open_session("personal", "work")
        for text in (turtles, BAKER[0]):
            engine.store(sid, "", text)
    # What Keepmind left before migration 018: an allergy to turtles bore on food.
    conn = apsw.Connection(str(home / "keepmind.db"))
    conn.execute("UPDATE memory_documents SET bears_on = 'food' WHERE body = ?", (turtles,))
    conn.execute("DELETE FROM _migrations WHERE name='018_bearings_again'")
    conn.close()
    with open_engine(home, settings=defaults(), clock=clock, start_workers=False):
        pass
    assert _bearings(home) == {turtles: PETS, BAKER[0]: FOOD}


def test_an_export_leaves_the_bearing_out_and_an_import_works_it_out(tmp_path, clock):
    with open_engine(tmp_path / "a", settings=defaults(), clock=clock, start_workers=False) as engine:
        sid = engine.open_session("personal", "work")
        for text in BAKER[:3]:
            engine.store(sid, "", text)
        engine.export(tmp_path / "out.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    documents = [line for line in lines if line.get("type") == "document"]
    assert len(documents) == 3 and not any("bears_on" in json.dumps(d) for d in documents)
    with open_engine(tmp_path / "b", settings=defaults(), clock=clock, start_workers=False) as engine:
        engine.import_path(tmp_path / "out.jsonl")
    assert _bearings(tmp_path / "b") == {BAKER[0]: FOOD, BAKER[1]: FOOD, BAKER[2]: None}


@pytest.mark.parametrize("text, bearing", [
    ("User drives a 2019 Toyota Yaris.", VEHICLE), ("Our van is a Ford Transit.", VEHICLE),
    ("I ride a Vespa to work.", VEHICLE), ("My car is a red Mini.", VEHICLE),
    ("I drove a Fiat in 2010.", None), ("I don't drive.", None), ("I drive to work every day.", None),
])
def test_what_the_user_drives_bears_on_their_vehicle(text, bearing):
    assert bears_on(text) == bearing


@pytest.mark.parametrize("message, bearing", [
    ("My car is making a rattling noise, what should I check?", VEHICLE), ("Book my van in for a service.", VEHICLE),
    ("Rent a car in Lisbon.", None),    # not the user's own
])
def test_a_task_about_the_users_vehicle(message, bearing):
    assert task_bears_on(message, True) == bearing


@pytest.mark.offline_model
def test_a_task_about_the_users_car_gets_what_they_drive(model_engine):
    """A walk: "My car is making a rattling noise…" and "User drives a 2019 Toyota Yaris." share no word."""
    sid = model_engine.open_session("personal", "work")
    for text in ["User drives a 2019 Toyota Yaris.", "User's dog Rex is a nervous rescue greyhound.",
                 "I'm allergic to cats.", "User's wife Elena is a vegetarian.", "User and others live in Bristol."]:
        model_engine.store(sid, "", text)
    injected, receipt = _recall(model_engine, "My car is making a rattling noise, what should I check?")
    assert injected == ["User drives a 2019 Toyota Yaris."]
    assert [c["why"] for c in receipt["companions"]] == ["bears on every vehicle task"]
    assert _recall(model_engine, "Suggest a dinner for two.")[0] == ["User's wife Elena is a vegetarian."]


@pytest.mark.parametrize("text, bearing", [
    ("I'm allergic to cats.", PETS), ("My son is allergic to dogs.", PETS), ("I have a severe allergy to horses.", PETS),
    ("I'm allergic to peanuts.", FOOD), ("I love cats.", None),
    ("On 9 November 2022, User is allergic to turtles but likes watching Friend's turtles.", PETS),
    ("I'm allergic to guinea pigs.", PETS),
])
def test_an_allergy_to_animals_bears_on_pets(text, bearing):
    assert bears_on(text) == bearing


@pytest.mark.parametrize("message, bearing", [
    ("Recommend a good pet for a small flat.", PETS), ("Find a pet-friendly cottage for the weekend.", PETS),
    ("Should we adopt a puppy?", PETS),
    ("How do I calm my dog during fireworks?", None),    # about the user's own dog
])
def test_a_task_about_a_pet(message, bearing):
    assert task_bears_on(message, True) == bearing


@pytest.mark.offline_model
def test_a_task_about_choosing_a_pet_gets_the_allergy_to_animals(model_engine):
    """A walk: "Recommend a good pet for a small flat." refused "I'm allergic to cats."."""
    sid = model_engine.open_session("personal", "work")
    fill(model_engine, sid)
    model_engine.store(sid, "", "I'm allergic to cats.")
    injected, receipt = _recall(model_engine, "Recommend a good pet for a small flat.")
    assert "I'm allergic to cats." in injected
    assert [c["why"] for c in receipt["companions"]] == ["bears on every pet task"]


@pytest.mark.offline_model
def test_a_diet_given_once_in_a_session_is_not_given_again(baker):
    session = baker.open_session("personal", "work")
    first = {i.content for i in baker.recall(session, "Suggest a family dinner for tonight.").items}
    assert {BAKER[0], BAKER[1]} <= first
    again = {i.content for i in baker.recall(session, "Suggest a recipe I could try at home.").items}
    assert not again & {BAKER[0], BAKER[1]}   # the agent holds them already (progressive exclusion)


@pytest.mark.offline_model
def test_an_allergy_is_not_crowded_out_by_what_the_user_merely_dislikes(model_engine):
    """Four diets and an allergy bear on the food task and three fit: the allergy is one of them."""
    sid = model_engine.open_session("personal", "work")
    store = ["I dislike spicy food and never use chilli.", "I only eat organic food.", "I follow a low-carb diet.",
             "I hate the taste of coriander in food.", "I'm severely allergic to cashews."]
    for text in store:
        model_engine.store(sid, "", text)
    injected, _ = _recall(model_engine, "Recommend some dishes to try on my trip to Vietnam.")
    assert len(injected) == 3 and "I'm severely allergic to cashews." in injected


@pytest.mark.parametrize("text, bearing", [
    ("My home airport is Boston Logan.", FLIGHT), ("I always prefer a window seat when I fly.", FLIGHT),
    ("I'm afraid of flying.", FLIGHT), ("I prefer aisle seats.", FLIGHT),
    ("I prefer aisle seats on trains.", None),          # a train's seat
    ("I flew to Paris last week.", None),               # an episode
    ("Anna flies a lot.", None),                        # not the user
    # a frequent-flyer programme the user is in, by its name or its Miles, never a distance
    ("I'm a United MileagePlus Gold member.", FLIGHT), ("My frequent flyer number with BA is 12345.", FLIGHT),
    ("I am an Asia Miles Gold member.", FLIGHT), ("I have Flying Blue Platinum status.", FLIGHT),
    ("I am not a MileagePlus member anymore.", None), ("I walk two miles every day and I am a gym member.", None),
])
def test_how_the_user_flies_bears_on_flights(text, bearing):
    assert bears_on(text) == bearing


@pytest.mark.offline_model
def test_a_flight_task_gets_the_home_airport_besides_the_seat(model_engine):
    """A walk: "Book me a flight to Berlin next week." got the seat and not the home airport."""
    sid = model_engine.open_session("personal", "work")
    store = ["My home airport is Boston Logan.", "I always prefer a window seat when I fly.",
             "I get motion sickness on boats.", "My sister Anna lives in Lisbon.", "I'm allergic to peanuts.",
             "I work at Acme as a data engineer.", "I play the cello on Tuesdays."]
    for text in store:
        model_engine.store(sid, "", text)
    injected, receipt = _recall(model_engine, "Book me a flight to Berlin next week.")
    assert "My home airport is Boston Logan." in injected
    assert "bears on every flight task" in [c["why"] for c in receipt["companions"]]
    assert "My home airport is Boston Logan." not in _recall(model_engine, "Find me a hotel in Rome.")[0]


@pytest.mark.offline_model
def test_a_flight_task_gets_the_users_airline_programme(model_engine):
    """A walk: "Book me a flight to Chicago next Friday." got the window seat, not "I'm a United
    MileagePlus Gold member." (no word in common, cosine far under the floor)."""
    sid = model_engine.open_session("personal", "work")
    fill(model_engine, sid)
    for text in ("I'm a United MileagePlus Gold member.", "I prefer a window seat when I fly.", "I live in Denver."):
        model_engine.store(sid, "", text)
    injected, _ = _recall(model_engine, "Book me a flight to Chicago next Friday.")
    assert "I'm a United MileagePlus Gold member." in injected
    assert "I'm a United MileagePlus Gold member." not in _recall(model_engine, "Find me a hotel in Rome.")[0]


@pytest.mark.offline_model
def test_one_fact_said_twice_takes_one_place_in_the_block(model_engine):
    """A walk on PrefEval: "What are some must-try local dishes in Tokyo?" got "User is allergic to
    turtles.", "User is lactose intolerant." and "User is lactose intolerant and is trying out
    dairy-free options." and, the item budget spent, not "I am vegan and avoid all animal products."."""
    sid = model_engine.open_session("personal", "work")
    fill(model_engine, sid)
    said = ["On 17 April 2022, User is lactose intolerant.",
            "On 5 September 2022, User is lactose intolerant and is trying out dairy-free options like oat milk.",
            "On 9 November 2022, User is allergic to turtles but likes watching Friend's turtles.",
            "I am vegan and avoid all animal products."]
    for text in said:
        model_engine.store(sid, "", text)
    injected, receipt = _recall(model_engine, "What are some must-try local dishes in Tokyo?")
    assert said[1] in injected and said[3] in injected
    assert said[0] not in injected and said[2] not in injected  # said by another; an allergy to animals
    assert any(d["stage"] == "budget" and d["why"].endswith("too") for d in receipt["dropped"])


def test_an_item_another_says_all_of_is_left_out():
    def item(i, text):
        return Injected(i, "", text, "durable_fact", 1.0)
    items = [item("a", "On 17 April 2022, User is lactose intolerant."), item("b", "I am vegan."),
             item("c", "On 5 September 2022, User is lactose intolerant and tries oat milk."),
             item("d", "User's son Kiran is 9."), item("e", "User's son Kiran is 12 and plays football."),
             item("f", "User eats fish."), item("g", "User doesn't eat fish."), item("h", "I am vegan.")]
    kept, dropped = said_by_another(items, content_stems)
    assert [i.id for i in kept] == ["b", "c", "d", "e", "f", "g"]   # a number and a negation are content
    assert [(i.id, why) for i, why in dropped] == [("a", "said by c too"), ("h", "said by b too")]
