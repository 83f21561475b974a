"""stance.py: task messages and standing statements, recognized by their form in any domain."""

import pytest

from keepmind.engine.stance import asks_for_help, lasting, standing, standing_and_lasting


@pytest.mark.parametrize("message", [
    "Book me a flight to Berlin next week.",
    "What coffee should I get this afternoon?",
    "Can you recommend some podcasts for my commute?",
    "I'm looking for a weekend getaway near the coast.",
    "What are some good board games for four players?",
    "Help me choose a laptop for video editing.",
    "Are there any vegetarian restaurants near the office?",
    "How should I prepare for a job interview at a bank?",
    "What’s the best way to learn Portuguese on my own?",
    # imperatives, whatever the verb: how most prompts to a coding agent begin
    "Configure my editor for Rust development.",
    "Refactor this module to use dataclasses.",
    "Summarize this article about climate change.",
    "Translate 'good morning' for my nieces.",
    "Investigate why the build is slow.",
    "Great, now run the tests.",
    "The tests pass locally. Update the README with the new flags.",
    # a request in a fragment
    "Dinner ideas for tonight?",
    "Any tips for jet lag after flying east?",
    "My dog pulls on walks. Tips?",
])
def test_task_messages_are_recognized(message):
    assert asks_for_help(message)


@pytest.mark.parametrize("message", [
    "When did I go to the LGBTQ support group?",
    "What advice did Anna give about the adoption agency?",
    "What book did Tom recommend to Priya?",
    "What is the capital of Peru?",
    "Where did my sister move last year?",
    "The meeting went well.",
    "Yesterday the meeting went well.",
    "Anna moved to Porto.",
    "Sprint review moved to Thursday.",
    "Caroline went to the support group.",
    "Thanks, that works.",
    "What ideas did Melanie have for the mural?",
])
def test_questions_about_the_past_and_statements_are_not_tasks(message):
    assert not asks_for_help(message)


@pytest.mark.parametrize("text", [
    "I always prefer a window seat when I fly.",
    "The user is allergic to peanuts.",
    "I strongly dislike horror films because they give me nightmares.",
    "User refuses to use subscription apps.",
    "I can't eat gluten.",
    "I play the cello in a community orchestra every Tuesday.",
    "The user drinks oat-milk flat whites every morning.",
    "I find crowded gyms overwhelming.",
    "I don’t drink alcohol.",
    "I follow a low-sodium diet.",
    "My favourite editor is Helix.",
])
def test_standing_statements_about_the_user_are_recognized(text):
    assert standing(text)


@pytest.mark.parametrize("text", [
    "The user's dentist appointment is on 14 March.",
    "User went to Paris in May 2023.",
    "Tom prefers tea.",                    # about someone else, not the user
    "Sprint review moved to Thursday.",
    # dated to a day: an episode, whose stance words describe the moment
    "On 25 May 2023, User went on a hiking trip with his workmates and values their support.",
    "On 22 December 2022, User's family loves to make and enjoy pizzas together.",
    "Yesterday I really enjoyed the jazz concert.",
    "I hated the sushi place we tried on March 3rd.",
])
def test_events_and_other_peoples_tastes_are_not_standing_statements(text):
    assert not standing(text)


@pytest.mark.parametrize("text", [
    "I always prefer a window seat when I fly.",
    "I use Neovim as my editor.",
    "The user's manager is Katrin; they have a weekly 1:1 on Tuesdays.",
    "Monitoring is Prometheus and Grafana.",
    "My sister Anna lives in Lisbon.",
    # a day that comes round again or is still ahead
    "The user's sister Amara lives in Lagos; her birthday is 12 June.",
    "The car's MOT is due on 14 August.",
    "The user's passport expires on 3 March.",
])
def test_what_is_not_dated_to_a_day_is_lasting(text):
    assert lasting(text)


@pytest.mark.parametrize("text", [
    "On 14 February the user caused an outage with a migration.",
    "User went to Paris on 3 May 2023.",
    "Yesterday I really enjoyed the jazz concert.",
    "On 14 August 2023, Friend celebrated her daughter's birthday with a concert.",
    "The user's dentist appointment is on 14 March.",
])
def test_an_episode_dated_to_a_day_is_not_lasting(text):
    assert not lasting(text)


def test_a_living_document_that_took_an_update_is_as_lasting_as_its_statements():
    """The append's separator says "as of" a day: read, it made the document an episode of that
    day, and an updated home, job or diet lost the lasting bonus to memories that never changed."""
    from keepmind.engine.writepath.mergeguard import append_body

    day = 1_800_000_000_000
    updated = append_body("User's sister Ana lives in Porto.", "User's sister Ana moved to Madrid in the spring.", day)
    assert "as of" in updated
    assert standing_and_lasting(updated) == standing_and_lasting(
        "User's sister Ana moved to Madrid in the spring.\nUser's sister Ana lives in Porto.") == (False, True)
    diet = append_body("I'm vegetarian.", "I'm pescatarian now.", day)
    assert standing_and_lasting(diet)[1]
    # a date the memory itself says still makes it an episode
    assert not standing_and_lasting(append_body("User flew to Rome.", "User flew to Porto on 3 May 2026.", day))[1]


@pytest.mark.parametrize("text, standing_instruction", [
    ("Please don't suggest restaurants that only serve steak.", True),
    ("Always use type hints in Python code.", True),
    ("From now on, answer me in Portuguese.", True),
    ("Whenever you write SQL, use uppercase keywords.", True),
    ("Never schedule meetings on Fridays.", True),
    # said to a friend, or for one task only
    ("Never give up!", False),
    ("Always here to help.", False),
    ("Don't give up on your dreams!", False),
    ("Don't book the 6am flight.", False),
    ("Whenever you need help, just let me know.", False),
])
def test_a_standing_instruction_to_the_assistant_is_a_standing_statement(text, standing_instruction):
    from keepmind.engine.stance import instruction

    assert instruction(text) is standing_instruction
    if standing_instruction:  # whatever else makes a sentence standing ("let me know whenever...") still does
        assert standing(text)
