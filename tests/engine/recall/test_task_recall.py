"""Recall for what agents send: task messages that need a standing preference, and prompts about two
things at once, with the real offline model and the shipped calibration (issue 16's scenarios)."""

from dataclasses import replace

import pytest

from support.stores import FACTS, fill

pytestmark = pytest.mark.offline_model

WINDOW = "I always prefer a window seat when I fly."
COFFEE_AND_DOG = "What coffee should I get this afternoon? Also, I just adopted a greyhound named Pixel."


def _recall(engine, message):
    session = engine.open_session("personal", "work")
    result = engine.recall(session, message)
    return [i.id for i in result.items], engine.explain(result.receipt_id)


def test_a_booking_task_gets_the_seat_preference_even_in_a_store_of_two(model_engine):
    sid = model_engine.open_session("personal", "work")
    pref = model_engine.store(sid, "", WINDOW).id
    model_engine.store(sid, "Dentist", "The user's dentist appointment is on 14 March at the Elm Street clinic.")
    injected, receipt = _recall(model_engine, "Book me a flight to Berlin next week.")
    assert receipt["mode"] == "hybrid" and injected == [pref]
    # too few standing statements for the task gate to read: chance would rarely score it so high
    [kept] = [d for d in receipt["gate"]["decisions"] if d["kept"]]
    assert kept["id"] == pref and kept["reason"].startswith("stands out from chance")


def test_in_a_store_of_two_a_task_the_preference_does_not_bear_on_injects_nothing(model_engine):
    sid = model_engine.open_session("personal", "work")
    model_engine.store(sid, "", WINDOW)
    model_engine.store(sid, "Dentist", "The user's dentist appointment is on 14 March at the Elm Street clinic.")
    injected, receipt = _recall(model_engine, "Can you suggest a recipe for dinner tonight?")
    assert receipt["mode"] == "hybrid" and injected == []


def test_a_booking_task_gets_the_seat_preference_among_other_memories(model_engine):
    sid = model_engine.open_session("personal", "work")
    fill(model_engine, sid)
    pref = model_engine.store(sid, "", WINDOW).id
    injected, _ = _recall(model_engine, "Book me a flight to Berlin next week.")
    assert pref in injected


def test_shipped_recall_gives_a_prompt_about_two_things_the_memory_of_the_one_the_store_knows(model_engine):
    sid = model_engine.open_session("personal", "work")
    ids = fill(model_engine, sid)
    coffee = ids[[t for t, _ in FACTS].index("Coffee")]
    injected, _ = _recall(model_engine, COFFEE_AND_DOG)
    assert coffee in injected


def test_with_message_parts_a_prompt_about_two_things_recalls_the_memory_of_the_one_the_store_knows(model_engine):
    shipped = model_engine.recaller.config
    model_engine.recaller.config = lambda: replace(shipped(), message_parts=True)
    sid = model_engine.open_session("personal", "work")
    ids = fill(model_engine, sid)
    coffee = ids[[t for t, _ in FACTS].index("Coffee")]
    injected, receipt = _recall(model_engine, COFFEE_AND_DOG)
    assert coffee in injected
    # it was matched against the coffee sentence, not the whole prompt
    [item] = [c for c in receipt["considered"] if c["id"] == coffee]
    assert "segment=1" in item["reasons"]


def test_the_seat_preference_ranks_at_the_head_for_the_booking_task(model_engine):
    sid = model_engine.open_session("personal", "work")
    ids = fill(model_engine, sid)
    pref = model_engine.store(sid, "", WINDOW).id
    _, receipt = _recall(model_engine, "Book me a flight to Berlin next week.")
    # what stays true of the user leads: the Berlin marathon (it shares the city) and the seat
    head = receipt["considered"][:2]
    marathon = ids[[t for t, _ in FACTS].index("Marathon")]
    assert [c["id"] for c in head] == [marathon, pref]
    assert all(any(r.startswith("lasting=") for r in c["reasons"]) for c in head)


TOOLS_AND_TASTES = ["I use Neovim as my editor.", "My dog Pixel is a greyhound.", "I prefer dark mode in every app.",
                    "I prefer concise answers without emojis.",
                    "I hate early morning meetings; schedule nothing before 10am."]


@pytest.mark.parametrize("message, needed", [
    ("Configure my editor for Rust development.", "I use Neovim as my editor."),       # an imperative
    ("How do I make my dog less anxious during storms?", "My dog Pixel is a greyhound."),
])
def test_a_task_ranks_the_fact_it_needs_above_every_preference_that_does_not_bear_on_it(model_engine, message,
                                                                                       needed):
    # The fact is no preference: with the task's prior on preferences alone, the dog came below all
    # four preferences of the store, down to one at cosine 0.16 (it is at 0.27, and shares "dog").
    sid = model_engine.open_session("personal", "work")
    fill(model_engine, sid)
    model_engine.store(sid, "", WINDOW)
    ids = {model_engine.store(sid, "", text).id: text for text in TOOLS_AND_TASTES}
    _, receipt = _recall(model_engine, message)
    first = receipt["considered"][0]
    assert ids.get(first["id"]) == needed and any(r.startswith("lasting=") for r in first["reasons"])


def test_a_general_knowledge_question_injects_nothing(model_engine):
    sid = model_engine.open_session("personal", "work")
    fill(model_engine, sid)
    model_engine.store(sid, "", WINDOW)
    injected, receipt = _recall(model_engine, "what is the capital of Peru?")
    assert receipt["mode"] == "hybrid" and injected == []


def test_the_rule_for_small_stores_waits_for_the_vector_channel_to_have_seen_every_memory(model_engine, monkeypatch):
    from keepmind.engine.recall import decide
    from keepmind.engine.recall.candidates import VECTOR_K

    seen = []
    gate = decide.feature_gate
    monkeypatch.setattr(decide, "feature_gate",
                        lambda *a, **kw: seen.append((kw["seen_all"], kw["excluded"])) or gate(*a, **kw))
    sid = model_engine.open_session("personal", "work")
    model_engine.store(sid, "", WINDOW)
    model_engine.store(sid, "Marathon", "The user is training for the Berlin marathon in September.")
    # in one session: the second time, the preference injected the first time is not a candidate but is
    # counted among the standing statements that could have scored as high
    asking = model_engine.open_session("personal", "work")
    assert [i.id for i in model_engine.recall(asking, "Book me a flight for next week.").items]
    model_engine.recall(asking, "Book me a flight to Berlin for the marathon.")
    for i in range(VECTOR_K):   # now more memories than the vector channel asks for
        model_engine.store(sid, f"Errand {i}", f"The user picked up parcel number {i} from the post office.")
    _, receipt = _recall(model_engine, "Book me a flight to Berlin next week.")
    assert receipt["counts"]["vector"] == VECTOR_K and seen == [(True, 0), (True, 1), (False, 0)]


NEWCOMER = ["I always prefer a window seat when I fly.", "I am allergic to peanuts.", "I write code in Neovim.",
            "My sister Anna lives in Lisbon.", "I'm vegan.", "I work at Acme as a data engineer.",
            "I play the cello on Tuesdays.", "My dog is called Rex.", "I prefer aisle seats on trains.",
            "I take the 8:10 train to work.", "I like dark roast coffee."]


@pytest.mark.parametrize("question, needed", [
    ("Do I have any food allergies?", "I am allergic to peanuts."),  # cosine 0.59; allergies/allergic stem apart
    ("Which editor do I use?", "I write code in Neovim."),           # cosine 0.42; no word in common
])
def test_a_newcomers_small_store_answers_a_question_said_in_other_words(model_engine, question, needed):
    """A store of eleven: the query model, which learnt from stores of hundreds where a message's words
    are known to the store, refused both (query below bar); the best of eleven memories at this cosine
    would rarely be chance (gate.Surprise.pick_any)."""
    sid = model_engine.open_session("personal", "work")
    ids = {text: model_engine.store(sid, "", text).id for text in NEWCOMER}
    injected, receipt = _recall(model_engine, question)
    assert injected == [ids[needed]]
    [kept] = [d for d in receipt["gate"]["decisions"] if d["kept"]]
    assert kept["reason"].startswith("stands out from chance") and "memories: 11" in kept["reason"]
    for unknown in ("what is the capital of Peru?", "Thanks, that's all."):
        assert _recall(model_engine, unknown)[0] == [], unknown
    # a dinner recipe shares no word with the diet, which bears on it all the same (bearing.py)
    assert set(_recall(model_engine, "Can you suggest a dinner recipe?")[0]) == {ids["I am allergic to peanuts."],
                                                                               ids["I'm vegan."]}


DRINKS_TOO = ("My sister Anna lives in Lisbon.", "I am allergic to peanuts.", WINDOW, "I drink my coffee black, no sugar.",
            "I prefer tea over coffee in the evening.", "I like green tea with jasmine, brewed for three minutes.",
            "I live in Madrid.")


def test_a_newcomers_store_with_several_preferences_still_gives_a_booking_task_its_seat(model_engine):
    """A user walk: with the window seat, the peanuts and Anna stored, "Book me a flight to Berlin
    next week." got the seat; after two drink preferences more (seven memories, five of them
    standing statements) it got nothing, refused by a query model fitted on stores of hundreds.
    The store is still seen whole, so chance decides: the seat stands out of five statements."""
    sid = model_engine.open_session("personal", "work")
    ids = {text: model_engine.store(sid, "", text).id for text in DRINKS_TOO}
    injected, receipt = _recall(model_engine, "Book me a flight to Berlin next week.")
    assert receipt["mode"] == "hybrid" and ids[WINDOW] in injected
    assert _recall(model_engine, "what is the capital of Peru?")[0] == []
    assert _recall(model_engine, "Help me write a cover letter for a job application.")[0] == []


WALKS_STORE = ["I'm allergic to peanuts, quite badly actually.", "My favourite cuisine is Sichuan.",
               "I'm not vegetarian anymore, I eat fish now.", "I hate mushrooms.",
               "User lives in York with User's wife Priya.", "User works at Brightwave Analytics as a data engineer.",
               "User's best friend Tom is gluten intolerant.", "I'd rather take the train whenever possible.",
               "User's daughter Maia is 7.", "I love hiking."]


def test_a_task_that_names_what_the_user_is_allergic_to_gets_the_allergy(model_engine):
    """A walk: the allergy ranked first for the takeaway and the query model refused it."""
    sid = model_engine.open_session("personal", "work")
    ids = [model_engine.store(sid, "", text).id for text in WALKS_STORE]
    injected, receipt = _recall(model_engine, "Order me a Thai takeaway with peanut sauce.")
    assert ids[0] in injected
    [why] = [d["reason"] for d in receipt["gate"]["decisions"] if d["id"] == ids[0]]
    assert why == "a caution the task names"
    # nothing the store holds is named by a question of general knowledge
    assert _recall(model_engine, "What is the capital of Peru?")[0] == []


def test_an_allergy_said_not_to_hold_is_no_caution():
    from keepmind.engine.stance import caution

    assert caution("I'm allergic to peanuts.") and caution("User's best friend Tom is gluten intolerant.")
    assert not caution("I'm not allergic to shellfish.") and not caution("I love peanut butter.")


DEVELOPERS_STORE = ["Never use print debugging in this repo, use the logger.",
                    "Always use f-strings instead of .format() in my Python code.",
                    "Never merge to main without a passing CI run.", "I prefer pytest over unittest.",
                    "I use Neovim with LazyVim.", "I prefer small PRs with one commit each.",
                    "User moved to Lisbon last month.", "User works at Acme Payments.",
                    "The team uses PostgreSQL 16 in production.", "I'm allergic to peanuts."]


@pytest.mark.parametrize("task, needed", [
    # a coding agent's walk: each ranked first and the query model refused it
    ("Add some debug output to figure out why the cart total is off.", 0),
    ("Format the greeting string with the customer's name in greet().", 1),
])
def test_a_task_that_names_a_standing_instruction_gets_it(model_engine, task, needed):
    sid = model_engine.open_session("personal", "work")
    ids = [model_engine.store(sid, "", text).id for text in DEVELOPERS_STORE]
    injected, receipt = _recall(model_engine, task)
    assert ids[needed] in injected
    [why] = [d["reason"] for d in receipt["gate"]["decisions"] if d["id"] == ids[needed]]
    assert why == "an instruction the task names"
    assert _recall(model_engine, "What is the capital of Peru?")[0] == []


@pytest.mark.parametrize("task", ["Clone my dotfiles repo from GitHub.", "Open a pull request on GitHub for this fix."])
def test_a_task_on_a_service_gets_what_the_user_is_called_there(model_engine, task):
    """A developer's walk: the handle ranked first and the query model refused it (0.012 < 0.124)."""
    sid = model_engine.open_session("personal", "work")
    ids = [model_engine.store(sid, "", text).id for text in DEVELOPERS_STORE + ["User's GitHub handle is dkowalski."]]
    injected, receipt = _recall(model_engine, task)
    assert ids[-1] in injected
    [why] = [d["reason"] for d in receipt["gate"]["decisions"] if d["id"] == ids[-1]]
    assert why == "an account the task names"
    assert ids[-1] not in _recall(model_engine, "Book me a table for two on Friday.")[0]  # no service named


def test_an_instruction_is_named_by_more_than_its_own_verb(model_engine):
    """A walk: "Write a limerick about coffee." got "Always write emails to suppliers in a formal tone."
    as an instruction the task names, by the word "write" alone."""
    sid = model_engine.open_session("personal", "work")
    ids = [model_engine.store(sid, "", text).id for text in DEVELOPERS_STORE
           + ["Always write emails to suppliers in a formal tone."]]
    assert ids[-1] not in _recall(model_engine, "Write a limerick about coffee.")[0]
    injected, receipt = _recall(model_engine, "Write an email to our flour supplier asking about a bulk discount.")
    assert ids[-1] in injected


@pytest.mark.parametrize("task, needed", [
    ("Plan a birthday party for my son.", "User's son Kiran is 9 and plays football on Saturdays."),
    ("Draft a note to my manager about Friday off.", "My manager is Katrin, she prefers short messages."),
])
def test_a_task_for_someone_by_their_tie_to_the_user_gets_what_is_known_of_them(model_engine, task, needed):
    """A walk's "Plan a birthday party for my son." refused the son (the query model's bar)."""
    sid = model_engine.open_session("personal", "work")
    store = ["User is Priya, User runs a small bakery in Leeds with User's sister Anika.", "I don't eat beef.",
             "I'm gluten intolerant, which is ironic for a baker.", "Always write emails to suppliers in a formal tone.",
             "I hate doing the accounts, my accountant is called Tom Reeves.", "I prefer short answers with bullet points.",
             "User's son Kiran is 9 and plays football on Saturdays.", "My manager is Katrin, she prefers short messages.",
             "User's husband Raj is a nurse and works night shifts.", "User is trying to cut down on caffeine.",
             "User drives a 2015 Ford Transit for deliveries.", "User and others open at 7am every day except Mondays."]
    ids = {text: model_engine.store(sid, "", text).id for text in store}
    injected, receipt = _recall(model_engine, task)
    assert ids[needed] in injected
    others = set(ids.values()) - {ids[needed]}
    assert not any(d["reason"] == "someone the task names" for d in receipt["gate"]["decisions"] if d["id"] in others)
    assert _recall(model_engine, "Plan a birthday party for a colleague.")[0] == []   # not the user's own


@pytest.mark.parametrize("task", ["How do I calm my dog during fireworks?", "What should I feed my dog?"])
def test_a_task_for_the_users_pet_gets_the_pet(model_engine, task):
    """A walk: both refused "User's dog Rex is a nervous rescue greyhound." (the query model's bar)."""
    sid = model_engine.open_session("personal", "work")
    store = ["User's dog Rex is a nervous rescue greyhound.", "I'm allergic to cats.",
             "User's daughter Maia is 6 and obsessed with dinosaurs.", "User works as a nurse on night shifts.",
             "User's wife Elena is a vegetarian.", "User and others live in Bristol.", "User drives a 2019 Toyota Yaris."]
    ids = [model_engine.store(sid, "", text).id for text in store]
    injected, receipt = _recall(model_engine, task)
    assert ids[0] in injected
    assert [d["reason"] for d in receipt["gate"]["decisions"] if d["id"] == ids[0]] == ["someone the task names"]
