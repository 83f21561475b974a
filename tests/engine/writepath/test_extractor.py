"""The rule-based extractor: lasting first-person statements, rewritten in the third person."""

import pytest

from keepmind.engine.writepath import extractor_eval
from keepmind.engine.writepath.extractor import extract, statements, third_person
from keepmind.engine.writepath.extractor_eval import netclaw_baseline


@pytest.mark.parametrize("text,category,fact", [
    ("I'm a Delta SkyMiles Gold member, so book Delta when you can.", "membership",
     "User is a Delta SkyMiles Gold member."),
    ("I usually fly out of Boston Logan.", "home", "User usually flies out of Boston Logan."),
    ("We live in Somerville near Davis Square.", "home", "User and others live in Somerville near Davis Square."),
    ("I really prefer aisle seats on long flights.", "preference", "User really prefers aisle seats on long flights."),
    ("I just don't like prawns.", "constraint", "User just doesn't like prawns."),  # "just" hid it (a walk)
    ("My favorite editor is Helix with the gruvbox theme.", "preference",
     "User's favorite editor is Helix with the gruvbox theme."),
    ("We decided to use Postgres for the billing service.", "decision",
     "User and others decided to use Postgres for the billing service."),
    ("I just finished the Boston marathon in 3:41.", "milestone", "User just finished the Boston marathon in 3:41."),
    ("My sister Anna works at Google in Zurich.", "person", "User's sister Anna works at Google in Zurich."),
    ("I work as a nurse at Mass General.", "work", "User works as a nurse at Mass General."),
    ("Dr. Okafor is my dentist on Elm Street.", "person", "Dr. Okafor is User's dentist on Elm Street."),
    ("I've been painting landscapes for years.", "activity", "User has been painting landscapes for years."),
    ("We're flying to Amsterdam on March 3 for a conference.", "plan",
     "User and others are flying to Amsterdam on March 3 for a conference."),
    # a clause that refers back keeps the clause it refers to (else: "It's User's home airport.")
    ("I always fly out of Boston Logan, it's my home airport.", "home",
     "User always flies out of Boston Logan, it's User's home airport."),
    ("We adopted a beagle last spring, that's my favourite thing this year.", "preference",
     "User and others adopted a beagle last spring, that's User's favourite thing this year."),
    # short statements of who the user is: they name someone, somewhere or how many
    ("I live in Lisbon.", "home", "User lives in Lisbon."),
    ("I'm based in Berlin.", "home", "User is based in Berlin."),
    ("I'm from Canada.", "home", "User is from Canada."),
    ("I work at Acme.", "work", "User works at Acme."),
    ("I have two kids.", "person", "User has two kids."),
    ("I'm married to Sam.", "person", "User is married to Sam."),
    ("My hamster is called Biscuit.", "pet", "User's hamster is called Biscuit."),
    ("I have a dog.", "pet", "User has a dog."),
    ("I have two cats.", "pet", "User has two cats."),
    ("My dog is a beagle named Rolo.", "pet", "User's dog is a beagle named Rolo."),
    ("I have a horse.", "possession", "User has a horse."),
    # who the user is, by the words of the rule: a name, an age, what they are, speak, use, do
    ("My name is Sam.", "identity", "User's name is Sam."),
    ("I'm 34 years old.", "identity", "User is 34 years old."),
    ("My birthday is on March 3.", "identity", "User's birthday is on March 3."),
    ("I am a plumber.", "identity", "User is a plumber."),
    ("I am a night person.", "identity", "User is a night person."),
    ("I'm a software engineer.", "work", "User is a software engineer."),
    ("I'm retired.", "work", "User is retired."),
    ("I study biology at UCL.", "work", "User studies biology at UCL."),
    ("I speak Spanish and French.", "skill", "User speaks Spanish and French."),
    ("I use Neovim.", "tool", "User uses Neovim."),
    ("I drive a Tesla.", "tool", "User drives a Tesla."),
    ("I live in colorado.", "home", "User lives in colorado."),  # a place said in lower case
    ("I am 25-years old.", "identity", "User is 25-years old."),
    ("I'm four years old.", "identity", "User is four years old."),
    ("I am not married.", "identity", "User is not married."),
    ("I'm single.", "identity", "User is single."),
    ("I am a Raptors fan.", "preference", "User is a Raptors fan."),
    ("I knit from time to time.", "habit", "User knits from time to time."),
    ("I have six brothers.", "person", "User has six brothers."),
    ("I own multiple cats.", "possession", "User owns multiple cats."),
    ("I teach english in a secondary school.", "work", "User teaches english in a secondary school."),
])
def test_lasting_statements_are_extracted(text, category, fact):
    [found] = statements(text)
    assert (found.category, found.fact) == (category, fact)


@pytest.mark.parametrize("text", [
    "Do you like aisle seats?",
    "If I move to Denver I would need a car.",
    "Maybe I'll try the new ramen place.",
    "Thanks, that sounds good!",
    "The weather is nice today.",
    "I love it!",
    "You should use Postgres.",
    # short, and naming no one, nowhere and no number: an event says nothing later
    "I went there.",
    "Can you remember my birthday?",
    "Can you remember where I parked?",
    "My family is awesome.",
    "I'm a bit tired.",
    "I'm a mess.",
    "I use it a lot.",
    "I speak to my mom every day.",
    "I'm a huge fan.",
])
def test_questions_hypotheticals_chatter_and_empty_objects_are_skipped(text):
    assert statements(text) == []


def test_interjections_are_stripped_not_fatal():
    [found] = statements("Oh wow, I just adopted a rescue greyhound named Pixel!")
    assert found.fact == "User just adopted a rescue greyhound named Pixel."


def test_proposals_carry_retrieval_metadata_and_class():
    found = extract([(3, "I'm a member of the Sierra Club. We're flying to Lisbon on May 2.")])
    by_class = {p.memory_class: p for p in found}
    member = by_class["durable_fact"]
    assert member.anchor and member.aliases and "membership" in member.facets and member.turns == (3,)
    assert by_class["evidence"].content == "User and others are flying to Lisbon on May 2."


def test_third_person_keeps_names_and_handles_contractions():
    assert third_person("I've been to Rome once and my brother lives there.", "Gina") == \
        "Gina has been to Rome once and Gina's brother lives there."


def test_netclaw_baseline_produces_its_fragments():
    assert netclaw_baseline("The cache uses Redis for sessions.") == ["Project Fact: The cache uses Redis for sessions."]


def test_eval_scores_a_tiny_conversation():
    sample = {
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1": [
                {"dia_id": "D1:1", "speaker": "Ana", "text": "I just adopted a rescue greyhound named Pixel!"},
                {"dia_id": "D1:2", "speaker": "Ben", "text": "Wow, congrats! How old is Pixel?"},
                {"dia_id": "D1:3", "speaker": "Ana", "text": "I love hiking with my friends on weekends."},
            ],
        },
        "observation": {"session_1_observation": {
            "Ana": [["Ana adopted a rescue greyhound named Pixel.", "D1:1"],
                    ["Ana works at a bakery.", ["D1:3"]]],
            "Ben": [["Ben congratulated Ana.", "D1:2"]],
        }},
    }
    result = extractor_eval.evaluate([sample], threshold=0.4)
    assert (result.statements, result.matched_statements) == (2, 1)
    assert (result.gold, result.matched_gold) == (3, 1)
    assert result.precision == 0.5 and result.recall == round(1 / 3, 4)


def test_eval_reads_malformed_dia_ids():
    assert extractor_eval.dia_ids("D8:6; D9:17") == ["D8:6", "D9:17"]
    assert extractor_eval.dia_ids(["D1:3", "D1:4,D1:5"]) == ["D1:3", "D1:4", "D1:5"]


@pytest.mark.parametrize("text,category,fact", [
    ("I am allergic to peanuts.", "health", "User is allergic to peanuts."),
    ("I play the cello in a community orchestra on Tuesdays.", "habit",
     "User plays the cello in a community orchestra on Tuesdays."),
    ("I strongly prefer trains and dislike overnight buses because I can't sleep on them.", "preference",
     "User strongly prefers trains and dislike overnight buses because User can't sleep on them."),
    ("I refuse to shop at stores that test on animals.", "constraint",
     "User refuses to shop at stores that test on animals."),
    ("I avoid anything with artificial sweeteners.", "constraint", "User avoids anything with artificial sweeteners."),
    ("I can't eat shellfish.", "constraint", "User can't eat shellfish."),
    ("I go swimming every Tuesday morning.", "habit", "User goes swimming every Tuesday morning."),
    ("I find group chats distracting.", "preference", "User finds group chats distracting."),
    ("Due to a knee injury, I avoid running on pavement.", "constraint",
     "Due to a knee injury, User avoids running on pavement."),
    ("I have a strong aversion to open-plan offices; I prefer quiet rooms.", "preference",
     "User has a strong aversion to open-plan offices; User prefers quiet rooms."),
    ("I only read books by independent publishers.", "preference", "User only reads books by independent publishers."),
    ("I'm not a fan of musicals.", "preference", "User is not a fan of musicals."),
    # a diet or condition says all it needs in one word, however short the sentence
    ("I am vegetarian.", "health", "User is vegetarian."),
    ("I'm vegan.", "health", "User is vegan."),
    ("I keep kosher.", "health", "User keeps kosher."),
    ("I'm keto these days.", "health", "User is keto these days."),
    # what the user is doing these days
    ("I'm taking a pottery class on Mondays.", "activity", "User is taking a pottery class on Mondays."),
    ("I'm volunteering as a mentor for a local school.", "activity",
     "User is volunteering as a mentor for a local school."),
])
def test_standing_statements_keep_their_intensifiers_and_reasons(text, category, fact):
    [found] = statements(text)
    assert (found.category, found.fact, found.memory_class) == (category, fact, "durable_fact")


@pytest.mark.parametrize("text", [
    "I love it!", "I really appreciate your help.", "I can't wait to see you!", "I don't know what to say.",
    "I won't give up.", "I love how it turned out.", "I am sure.", "I'm so happy.", "I am hungry.",
    "I'm doing OK, thanks.", "I'm taking a break.", "It's nice to know that what I'm doing is making an impact.",
])
def test_a_stance_word_without_an_object_is_chatter(text):
    assert statements(text) == []


def test_a_statement_of_several_sentences_keeps_every_content_word():
    from keepmind.engine.recall.plan import content_stems

    said = "I'm not a fan of streaming services. I prefer physical formats like vinyl and cassette tapes."
    found = extract([(1, said)])
    assert [p.memory_class for p in found] == ["durable_fact", "durable_fact"]
    learnt = set(content_stems(" ".join(p.content for p in found)))
    assert set(content_stems(said)) <= learnt


def test_the_observer_keeps_three_proposals_per_turn_not_per_run(engine, personal, clock):
    from support.provider import drain

    prefs = ["I avoid dairy.", "I prefer aisle seats.", "I dislike horror films.", "I love jazz records.",
             "I refuse to fly overnight."]
    for p in prefs:
        engine.add_turn(personal, user=p, assistant="Noted.")
    clock.advance(90_000)
    [run] = engine.writepath.scheduler.run_once(clock())
    assert run.decided_by == "rule" and len(run.checkpoint_ids) == 5
    drain(engine)
    assert len(engine.list_memories(personal)) == 5


def test_a_users_standing_statement_is_learnt_in_their_own_words():
    # a task the user sends later is in the first person too: "User dislikes ..." is ~0.09 less
    # similar to it (PrefEval dev, all-MiniLM-L6-v2); the title is the body's opening (not embedded twice)
    [pref] = extract([(0, "I dislike the taste and smell of fish and seafood, so please keep that in mind.")])
    assert pref.content == "I dislike the taste and smell of fish and seafood."
    assert pref.title == pref.content
    [member] = extract([(0, "I'm a Delta SkyMiles Gold member, so book Delta when you can.")])
    assert member.content == "User is a Delta SkyMiles Gold member."


def test_in_a_team_session_the_rules_keep_what_the_team_decided_not_what_the_speaker_is(engine, personal, team,
                                                                                          clock):
    """A team's memories are read by every teammate and the rules cannot say who "I" is: a speaker's
    allergy or tastes said there are not made team-wide ("User is allergic to peanuts." for all)."""
    from support.provider import drain

    [mine] = extract([(0, "I dislike the taste and smell of fish and seafood.")], own_words=False)
    assert mine.content.startswith("User dislikes") and "fish and seafood" in mine.content
    engine.add_turn(personal, user="I strongly dislike overnight buses.", assistant="Noted.")
    engine.add_turn(team, user="I strongly dislike overnight buses. I am allergic to peanuts.", assistant="Noted.")
    engine.add_turn(team, user="We decided to use Terraform for the staging infrastructure.", assistant="OK.")
    # what the team builds and with what is the team's (a walk: "…with Svelte." was not learnt), and
    # a team memory says "The team", not "User and others"; where "we" live is not the team's
    engine.add_turn(team, user="We build the frontend with Svelte. We use PostgreSQL for the main database.",
                    assistant="OK.")
    engine.add_turn(team, user="We live in Somerville near Davis Square.", assistant="OK.")
    clock.advance(90_000)
    runs = engine.writepath.scheduler.run_once(clock())
    drain(engine)
    bodies = sorted((m.audience, m.body) for m in engine.list_memories(personal))
    assert bodies == [("personal", "I strongly dislike overnight buses."),
                      ("team", "The team builds the frontend with Svelte."),
                      ("team", "The team decided to use Terraform for the staging infrastructure."),
                      ("team", "The team uses PostgreSQL for the main database.")]
    [team_run] = [r for r in runs if r.session_id == team]
    assert team_run.rejections == {"about-the-speaker-in-a-team-session": 3}


def test_a_team_session_learns_its_routines_roles_and_what_is_ours_as_the_teams(engine, personal, team, clock):
    """A walk's team session: "We deploy every Tuesday…" and "Priya is our tech lead." were not
    learnt, and "Our database is Postgres 16." became "User's database" (the speaker's)."""
    from support.provider import drain

    engine.add_turn(team, user="We deploy every Tuesday after the standup. Priya is our tech lead.", assistant="OK.")
    engine.add_turn(team, user="Our database is Postgres 16.", assistant="OK.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    drain(engine)
    memories = engine.list_memories(team)
    assert sorted(m.body for m in memories) == ["Priya is the team's tech lead.",
                                                "The team deploys every Tuesday after the standup.",
                                                "The team's database is Postgres 16."]
    assert all(m.audience == "team" and "User" not in m.title for m in memories)
    # said of the team as one ("The team ships…", a walk: nothing was learnt), and a convention
    # with no one's name in it; "…my JavaScript" is the speaker's
    engine.add_turn(team, user="The team ships the mobile SDK with Kotlin Multiplatform. Our team deploys on Fly.io.",
                    assistant="OK.")
    engine.add_turn(team, user="Never merge to main without two approvals. Never use semicolons in my JavaScript.",
                    assistant="OK.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    drain(engine)
    learnt = {m.body for m in engine.list_memories(team)} - {m.body for m in memories}
    assert learnt == {"The team ships the mobile SDK with Kotlin Multiplatform.", "The team deploys on Fly.io.",
                      "Never merge to main without two approvals."}
    # in a personal session "our" stays the user's household ("our dog")
    [dog] = extract([(0, "Our dog Pixel is a greyhound.")])
    assert dog.content == "User's dog Pixel is a greyhound."
    assert dog.anchor == "Pixel" and [(r.relation, r.target) for r in dog.relations] == [("pet", "Pixel")]


@pytest.mark.parametrize("text,title", [
    ("My sister Anna lives in Lisbon.", "User's sister Anna lives in Lisbon."),
    ("I work at Acme as a data engineer.", "User works at Acme as a data engineer."),
    ("I just finished the Boston marathon in 3:41 and it was the hardest race I have run in years.",
     "User just finished the Boston marathon in 3:41 and it was the hardest…"),
])
def test_a_learnt_fact_is_titled_by_its_opening_not_by_keywords(text, title):
    from keepmind.engine.models.service import passage_text

    [proposal] = extract([(0, text)])
    assert proposal.title == title  # not "Sister Anna lives Lisbon"
    assert passage_text(proposal.title, proposal.content) == proposal.content  # embedded once


@pytest.mark.parametrize("text,anchor", [
    ("I have asthma.", "User's health: asthma"),
    ("I'm vegan.", "User's health: vegan"),
    ("I am allergic to peanuts.", "User's health: allergic peanuts"),
    ("I strongly prefer trains and dislike flying.", "User's preference: trains flying"),
    ("I'm a huge fan of early morning hikes.", "User's preference: early morning hikes"),
    ("I play the cello in a community orchestra on Tuesdays.", "User's habit: cello community orchestra"),
    ("I can't eat gluten.", "User's constraint: can't eat gluten"),  # its negation is what it says
    ("I never eat pork.", "User's constraint: never eats pork"),
])
def test_a_topic_anchor_is_named_by_what_the_statement_is_about(text, anchor):
    """Not by its stance words ("user preference: prefers trains dislike") and never by the kind
    alone: "I have asthma." and "I'm vegan." were both "user health: health", one living document."""
    [proposal] = extract([(0, text)])
    assert (proposal.anchor, proposal.anchor_type) == (anchor, "topic")


@pytest.mark.parametrize("text,fact", [
    ("Actually my sister lives in Porto now.", "User's sister lives in Porto now."),
    ("Actually, Anna moved to Porto.", "Anna moved to Porto."),
    ("Update: I work at Globex now.", "User works at Globex now."),
    # an addition's lead-in (a walk learnt "Also User lives in Madrid.")
    ("Here is my new laptop. Also I live in Madrid.", "User lives in Madrid."),
    ("Plus my sister Anna lives in Lisbon.", "User's sister Anna lives in Lisbon."),
    ("And I work at Acme as a data engineer.", "User works at Acme as a data engineer."),
    ("Andrew is my brother.", "Andrew is User's brother."),  # a name that begins with one is a name
    # context given ahead of a task ("For context: User works…" was its text)
    ("For context: I work night shifts at the hospital.", "User works night shifts at the hospital."),
    ("Context: we use Django 4.2.", "User and others use Django 4.2."),
    ("Heads up, I'm allergic to latex.", "I'm allergic to latex."),
])
def test_a_corrections_lead_in_is_not_part_of_the_fact(text, fact):
    [proposal] = extract([(0, text)])
    assert proposal.content == fact


@pytest.mark.parametrize("text,fact", [
    ("Can you remember that I am vegetarian?", "User is vegetarian."),
    ("Could you please note that I work at Acme?", "User works at Acme."),
    ("Can you remember that I'm allergic to peanuts, please?", "User is allergic to peanuts."),
    ("Would you keep in mind that I prefer aisle seats on long flights?", "User prefers aisle seats on long flights."),
])
def test_a_request_to_remember_asked_as_a_question_is_what_it_asks_to_remember(text, fact):
    [found] = statements(text)
    assert found.fact == fact


@pytest.mark.parametrize("text, retracted", [
    ("I'm not vegetarian anymore, I eat fish now.", ("vegetarian",)),
    ("I'm pescatarian now, not vegetarian.", ("vegetarian",)),
    ("I no longer use Neovim, I switched to VS Code.", ("neovim",)),
    ("I stopped drinking coffee.", ("coffee",)),
    ("I switched from Vim to Emacs.", ("vim",)),
    ("I quit smoking last year.", ("smoking", "last", "year")),
])
def test_a_change_of_a_standing_fact_is_learnt_in_the_users_words_with_what_it_retracts(text, retracted):
    from keepmind.engine.writepath.curation import retracted as retracted_words

    [found] = extract([(0, text)])
    assert found.content == text and found.memory_class == "durable_fact"
    assert retracted_words(found.content)[:len(retracted)] == retracted


@pytest.mark.parametrize("text", ["I don't like coffee.", "I'm not sure about that.", "I stopped by the bakery."])
def test_a_plain_negation_retracts_nothing(text):
    from keepmind.engine.writepath.curation import retracted as retracted_words

    assert retracted_words(text) == () or not extract([(0, text)])


def test_third_person_conjugates_past_now_and_no_longer():
    assert third_person("I no longer live in Lisbon.", "User") == "User no longer lives in Lisbon."
    assert third_person("I now work at Northwind Labs.", "User") == "User now works at Northwind Labs."
    assert third_person("I quit smoking.", "User") == "User quit smoking."


@pytest.mark.parametrize("text, facts", [
    # two statements joined by "and": the name was lost
    ("Hi, my name is Daniel Ortiz and I'm a backend developer.",
     ["User's name is Daniel Ortiz.", "User is a backend developer."]),
    ("I hate it when people schedule meetings on Friday afternoons.",
     ["I hate it when people schedule meetings on Friday afternoons."]),
    ("My new manager is Carla Mendes.", ["User's new manager is Carla Mendes."]),
    ("Please fix your notes: my sister lives in Madrid now.", ["User's sister lives in Madrid now."]),
    ("I'm 38 years old, by the way.", ["User is 38 years old."]),
])
def test_what_a_walk_said_is_kept_whole_and_without_its_asides(text, facts):
    assert [p.content for p in extract([(0, text)])] == facts


def test_a_role_named_after_is_a_person_and_a_nationality_is_not():
    from keepmind.engine.writepath.extractor import ties_of

    assert [(r.relation, r.target) for r in ties_of("My new manager is Carla Mendes.")[0]] == [
        ("manager", "Carla Mendes")]
    assert ties_of("My boss is French.")[0] == ()


@pytest.mark.parametrize("text, facts", [
    # the second half was dropped as "a tail addressed to the listener", and with it the point
    ("I'm vegetarian, so please don't suggest restaurants that only serve steak.",
     ["I'm vegetarian, so don't suggest restaurants that only serve steak."]),
    ("I'm allergic to nuts, so please never suggest recipes with almonds.",
     ["I'm allergic to nuts, so never suggest recipes with almonds."]),
    # a request for the task at hand is no part of the statement it was said for
    ("I'm a vegetarian but my husband eats meat, so suggest a dinner we can both enjoy.",
     ["I'm a vegetarian but my husband eats meat."]),
    ("I'm allergic to nuts, so find me a recipe without them.", ["I'm allergic to nuts."]),
    # a standing instruction names no stance of the speaker: nothing was learnt
    ("Please don't suggest restaurants that only serve steak.", ["Don't suggest restaurants that only serve steak."]),
    ("Never use semicolons in my JavaScript.", ["Never use semicolons in my JavaScript."]),
    ("From now on, answer me in Portuguese.", ["From now on, answer me in Portuguese."]),
    ("Never edit the generated files.", ["Never edit the generated files."]),  # a verb done to code
    ("Always pin versions in requirements.txt.", ["Always pin versions in requirements.txt."]),
    ("Never use features not yet supported by Safari.", ["Never use features not yet supported by Safari."]),
    # a one-off request and words to a friend are not instructions
    ("Don't book the 6am flight.", []),
    ("Never give up!", []),
    # nor one for the task at hand: recall gave them to every later task (a walk)
    ("Don't add tests yet, just the fix.", []),
    ("Don't use the cache for this run.", []),
    ("Always answer in French for now.", []),
])
def test_a_standing_instruction_is_learnt_whole(text, facts):
    assert [p.content for p in extract([(0, text)])] == facts


def test_a_standing_instruction_in_a_team_session_says_whose():
    [p] = extract([(0, "Always use type hints in Python code.")], subject="Team", subject_kind="team", own_words=False)
    assert p.content == "Always use type hints in Python code." and "instruction" in p.facets


@pytest.mark.parametrize("text, facts", [
    # what a newcomer says of themselves that the rules did not keep
    ("Call me Sam.", ["User goes by Sam."]),
    ("I go by Sam.", ["User goes by Sam."]),
    ("I live with my parents.", ["User lives with User's parents."]),
    ("I work remotely from home on Mondays and Fridays.", ["User works remotely from home on Mondays and Fridays."]),
    ("I drive a 2019 Honda Civic.", ["User drives a 2019 Honda Civic."]),
    ("My phone is an iPhone 15.", ["User's phone is an iPhone 15."]),
    ("I am learning Japanese.", ["User is learning Japanese."]),
    # asked to, not told: nothing
    ("Call me when you land.", []),
])
def test_who_the_user_is_how_they_live_work_and_get_around_is_kept(text, facts):
    assert [p.content for p in extract([(0, text)])] == facts


@pytest.mark.parametrize("said, written", [
    # the past of an irregular verb is not conjugated (a walk's "User never saids…")
    ("I never said I was vegetarian.", "User never said User was vegetarian."),
    ("Forget what I said about Toronto.", "Forget what User said about Toronto."),
    ("I always thought so.", "User always thought so."),
    ("I already paid the rent.", "User already paid the rent."),
    # the same in present and past: a habit, as the rules mostly hear it
    ("I set goals every week.", "User sets goals every week."),
])
def test_third_person_leaves_an_irregular_past_as_it_is(said, written):
    assert third_person(said, "User") == written


@pytest.mark.parametrize("text", [
    # a cousin's bio pasted to be proofread moved the user's home and job (a walk)
    'Can you proofread this for my cousin? "Hi, I\'m Laura. I live in Toronto and I work at Shopify as a designer."',
    "Please proofread this: I live in Toronto and I work at Shopify as a designer.",
    "Translate the following into French: I am allergic to peanuts.",
    "```\nI live in Toronto.\n```",
    "> I live in Toronto and I work at Shopify.",
    # a story asked for in the first person: where the user lives, it read
    "Write a short story in first person where I'm a pirate. Start with: I live on a ship called the Black Gull "
    "and I hate the navy.",
    "Let's role-play: I'm a detective and I live in Paris.",
    # a coding agent's prompts (a walk): a colleague's message, a customer's bio in an error, commits,
    # a README to edit, exception lines, indented code and its comments
    "My colleague Priya sent this on Slack, can you draft a reply?\n\nHey! I'm out Friday, I live in Berlin so I'll "
    "be on CET next week. I'm allergic to peanuts, so no snacks for me at the offsite.",
    "The checkout fails. Sentry shows:\n\nValidationError: field 'bio' rejected for user 4411: I am a vegetarian and "
    "I live in Toronto, I work as a nurse.",
    "Squash these into one commit message:\n\ncommit 9f1c2ab\nAuthor: Sam Lee\n\n    I switched the cache to Redis "
    "because I hate memcached\n\ncommit 1a2b3c\n\n    I live in Dublin now so I moved the cron to GMT",
    "Can you tighten the intro of our README?\n\nI built this library to make parsing config files painless. I love "
    "Rust and I hate YAML.",
    "Here's the team README section, fix the typos:\n\nWe builds the API with FastAPI. Never commit directly to the "
    "release branch.",
    "Traceback (most recent call last):\n  File \"app.py\", line 3\nValueError: I can't parse 'foo'.",
    "Error: I cannot find module 'express'.",
    "PermissionError: [Errno 13] I am not allowed to write to /var/log/app.log.",
    "Refactor this function:\ndef load(path):\n    # I always open files in binary mode here\n    return open(path)",
])
def test_what_the_speaker_does_not_say_in_their_own_voice_is_not_learnt(text):
    assert statements(text) == []


@pytest.mark.parametrize("text, facts", [
    ("I live in Leeds. Please proofread this: I work at Shopify as a designer.", ["User lives in Leeds."]),
    ("I'm vegetarian. Write a story where I'm a pirate who lives on a ship.", ["User is vegetarian."]),
    # a quoted title is part of what is said; a role for the listener leaves the speaker's facts theirs
    ('My favourite book is "Dune".', ['User\'s favourite book is "Dune".']),
    ("Imagine you are a travel agent. I live in Boston.", ["User lives in Boston."]),
    ("Some context about me:\n\nI live in Lisbon. I prefer aisle seats.", ["User lives in Lisbon.",
                                                                        "User prefers aisle seats."]),
    ("I moved to Lisbon last month.\nCan you check this code?\nI live in Dublin now.",
     ["User moved to Lisbon last month."]),
    ("Traceback (most recent call last):\nValueError: bad input\nCan you fix it? I prefer small fixes.",
     ["User prefers small fixes."]),
    ("I always check my email first thing: it keeps me calm.", ["User always checks User's email first thing: it "
                                                                 "keeps User calm."]),
])
def test_the_speakers_own_words_around_a_text_they_ask_for_are_learnt(text, facts):
    assert [st.fact for st in statements(text)] == facts


@pytest.mark.parametrize("text, category, fact", [
    # a walk's new user: each gave nothing, or kept what was not the fact
    ("I'd rather take the train whenever possible.", "preference", "User would rather take the train whenever possible."),
    ("I'm not a morning person at all, so never book anything before 9am for me.", "preference",
     "User is not a morning person at all, so never book anything before 9am for User."),
    ("Everyone calls me Dani.", "identity", "User goes by Dani."),
    ("My manager at Brightwave is Fiona Grant.", "relation", "User's manager at Brightwave is Fiona Grant."),
    ("Leo is allergic to eggs, so any birthday cake needs to be egg-free.", "health",
     "Leo is allergic to eggs, so any birthday cake needs to be egg-free."),
    ("I'm starting at Brightwave Analytics next month as a senior data engineer.", "plan",
     "User is starting at Brightwave Analytics next month as a senior data engineer."),
    ("I'm 41, turning 42 in March.", "identity", "User is 41, turning 42 in March."),
    ("My dad passed away in 2019.", "person", "User's dad passed away in 2019."),
    ("But I love spicy food, the hotter the better.", "preference", "User loves spicy food, the hotter the better."),
    ("Big news: we moved to York last weekend.", "home", "User and others moved to York last weekend."),
    ('I love hiking in the Dales."', "preference", "User loves hiking in the Dales."),
    ("I'm allergic to peanuts, quite badly actually, so keep that in mind for any food stuff.", "health",
     "User is allergic to peanuts, quite badly actually."),
    # a walk's personal assistant user: each gave nothing
    ("My mom's birthday is June 3rd.", "date", "User's mom's birthday is June 3rd."),
    ("Our anniversary is on 12 August.", "date", "User's anniversary is on 12 August."),
    ("My wife and I are expecting our first baby in May.", "family",
     "User's wife and User are expecting User's first baby in May."),
    ("I have a PhD in chemistry.", "skill", "User has a PhD in chemistry."),
    ("I have a master's degree in economics.", "skill", "User has a master's degree in economics."),
    ("We're renovating the kitchen this spring.", "project", "User and others are renovating the kitchen this spring."),
    ("I drink my coffee black.", "preference", "User drinks User's coffee black."),  # stored in the user's words
    ("I take the 7:15 train to work.", "habit", "User takes the 7:15 train to work."),
    ("Sam and I live in Porto.", "home", "Sam and User live in Porto."),  # it kept "User lives in Porto."
    ("I want to learn Rust this year.", "plan", "User wants to learn Rust this year."),
    ("I need to finish the report by Friday.", "plan", "User needs to finish the report by Friday."),  # "User need"
    ("I always need coffee in the morning.", "habit", "User always needs coffee in the morning."),
    # a job in one word ("I'm a nurse." gave nothing: one key word was too few for a fact of work)
    ("I'm a nurse.", "work", "User is a nurse."),
    ("Background: I'm a teacher.", "work", "User is a teacher."),
    # how long it has held ("I've been a vegetarian for ten years." gave nothing)
    ("I've been a vegetarian for ten years.", "health", "User has been a vegetarian for ten years."),
    ("I have been sober for two years.", "health", "User has been sober for two years."),
    ("We use poetry here.", "tool", "User and others use poetry here."),
    # a question asked after the comma hid the statement before it
    ("Hey! Quick one - my daughter Maia is 6 and obsessed with dinosaurs, any book ideas for her birthday?", "person",
     "User's daughter Maia is 6 and obsessed with dinosaurs."),
    ("I'm allergic to nuts, what can I cook tonight?", "health", "User is allergic to nuts."),
    ("I have two kids under five, any ideas for a rainy day?", "person", "User has two kids under five."),
    ("I used to live in Paris.", "history", "User used to live in Paris."),  # a past home: no lives_in edge
    ("I used to play the violin in high school.", "history", "User used to play the violin in high school."),
    # LoCoMo turns each gave nothing
    ("Unfortunately, I also lost my job at Door Dash this month.", "work",
     "User also lost User's job at Door Dash this month."),
    ("I'm also working on an online platform for the studio.", "project",
     "User is also working on an online platform for the studio."),
    ("I actually started on a book recently.", "milestone", "User actually started on a book recently."),
    ("I've gone camping a few times but never tried mountain climbing.", "event", "User has gone camping a few times."),
    ("I'm now mentoring the younger players on my team.", "project",
     "User is now mentoring the younger players on User's team."),
    ("I'm now part of the fire-fighting brigade.", "membership", "User is now part of the fire-fighting brigade."),
    ("We're putting together a talent show for the kids next month.", "plan",
     "User and others are putting together a talent show for the kids next month."),
    ("I'm doing well, I just had a picnic with the wife and kids.", "event",
     "User just had a picnic with the wife and kids."),
    ("I'm thinking about starting a community project.", "plan", "User is thinking about starting a community project."),
    ("Well, I'm off to have dinner with some friends from the gym.", "plan",
     "User is off to have dinner with some friends from the gym."),
    ("Last week I scored 40 points, my highest ever.", "milestone", "Last week User scored 40 points, User's highest ever."),
    ("I've been wanting to visit NYC.", "plan", "User has been wanting to visit NYC."),
    ("I also use a whiteboard to stay on track.", "tool", "User also uses a whiteboard to stay on track."),
    ("I also had the opportunity to see him play live.", "event", "User also had the opportunity to see him play live."),
    # what an assistant books, buys and plans with (a third walk: each gave nothing)
    ("My flight to Tokyo is on March 3rd.", "plan", "User's flight to Tokyo is on March 3rd."),
    ("My passport expires in June 2027.", "date", "User's passport expires in June 2027."),
    ("My shoe size is 43.", "identity", "User's shoe size is 43."),
    ("I'm 5 foot 10 and about 80 kilos.", "identity", "User is 5 foot 10 and about 80 kilos."),
    ("I'm in the Pacific time zone.", "identity", "User is in the Pacific time zone."),
    ("I'm Brazilian.", "identity", "User is Brazilian."),
    ("I'm left-handed.", "identity", "User is left-handed."),
    ("I work 9 to 5 Monday to Friday.", "work", "User works 9 to 5 Monday to Friday."),
    ("English is my second language.", "skill", "English is User's second language."),
    ("We have a Costco membership.", "membership", "User and others have a Costco membership."),
    ("My partner is vegan, so we cook plant-based at home.", "health",
     "User's partner is vegan, so User and others cook plant-based at home."),
    # a title in quotation marks is the speaker's words (it was cut as a quoted passage: "called .")
    ('I\'m really excited to watch a new show called "The Wheel of Time".', "plan",
     'User is really excited to watch a new show called "The Wheel of Time".'),
    ('My favourite book is "The Name of the Wind".', "preference", 'User\'s favourite book is "The Name of the Wind".'),
    # a hedge about the listener hedges nothing of what the speaker said, and is no part of it
    ("I made a dairy-free chocolate cake the other day, maybe you would like that!", "event",
     "User made a dairy-free chocolate cake the other day."),
    # a walk's bakery owner: each gave nothing
    ("We open at 7am every day except Mondays.", "work", "User and others open at 7am every day except Mondays."),
    ("Our shop closes at 5pm on Saturdays.", "work", "User's shop closes at 5pm on Saturdays."),
    ("We switched our flour supplier to Shipton Mill last month.", "change",
     "User and others switched User's flour supplier to Shipton Mill last month."),
    ("We moved our hosting to Hetzner last year.", "change", "User and others moved User's hosting to Hetzner last year."),
])
def test_what_a_new_user_says_of_themselves_and_their_people_is_learnt(text, category, fact):
    assert [(st.category, st.fact) for st in statements(text)] == [(category, fact)]


def test_someones_condition_said_as_not_held_is_not_learnt():
    assert statements("Caroline is not vegan.") == []


def test_a_team_plan_called_off_goes_into_the_decision_it_changes(engine, team, clock):
    """A walk: "we're not moving to Dagster after all, we decided to stay on Airflow" was a memory
    of its own; the decision to move stayed live, and it was the one recall gave."""
    from keepmind.engine.stance import current_part
    from support.provider import drain

    engine.add_turn(team, user="We decided to move the nightly ETL from Airflow to Dagster.", assistant="OK.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    drain(engine)
    engine.add_turn(team, user="Update: we're not moving to Dagster after all, we decided to stay on Airflow for now.",
                    assistant="OK.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    drain(engine)
    [memory] = engine.list_memories(team)
    assert current_part(memory.body) == ("The team is not moving to Dagster after all, the team decided to stay on "
                                         "Airflow for now.")
    assert "The team decided to move the nightly ETL from Airflow to Dagster." in memory.body  # its history


@pytest.mark.parametrize("text, memory_class", [
    # a walk: kept for good, as a possession and a project
    ("I have a meeting with Fiona at 3pm tomorrow.", "evidence"),
    ("I'm working on the quarterly report today.", "evidence"),
    ("I'm working on a novel about Lisbon.", "durable_fact"),
    ("I moved to York last weekend.", "durable_fact"),
])
def test_what_the_user_has_or_does_on_a_day_to_come_is_an_episode(text, memory_class):
    [st] = statements(text)
    assert st.memory_class == memory_class


@pytest.mark.parametrize("text, learnt", [
    # a walk: any sentence opening with "When" was skipped
    ("When you book restaurants for us, we like quiet places.", True),
    ("When you write SQL for me, I'd rather have CTEs than subqueries.", True),
    ("When you get a chance, I want to talk.", False),
    ("When I was young, we lived in Leeds.", False),
])
def test_what_the_user_likes_of_a_kind_of_task_is_a_standing_instruction(text, learnt):
    from keepmind.engine.stance import instruction

    found = statements(text)
    assert [st.category for st in found] == (["instruction"] if learnt else [])
    assert instruction(text) is learnt
    if learnt:
        [proposal] = extract([(0, text)])
        assert proposal.content == text  # in the user's own words


@pytest.mark.parametrize("text, fact", [
    # a developer's facts a walk's coding agent sent, which gave nothing
    ("We deploy to Fly.io every Tuesday.", "User and others deploy to Fly.io every Tuesday."),
    ("I use ruff for linting.", "User uses ruff for linting."),
    ("I use pytest for tests and mypy for type checking.", "User uses pytest for tests and mypy for type checking."),
    ("Our CI runs on GitHub Actions.", "User's CI runs on GitHub Actions."),
    ("I'm on macOS Sonoma with Python 3.12.", "User is on macOS Sonoma with Python 3.12."),
    # a second walk's developer (each gave nothing)
    ("We use poetry, not pip, in this repo.", "User and others use poetry, not pip, in this repo."),
    ("We're still on Django 3.2.", "User and others are still on Django 3.2."),
    ("Our Postgres is version 15.", "User's Postgres is version 15."),
    ("My GitHub handle is dkowalski.", "User's GitHub handle is dkowalski."),
])
def test_a_developers_tools_and_routines_are_learnt(text, fact):
    assert [st.fact for st in statements(text)] == [fact]


@pytest.mark.parametrize("text", ["I moved my car to the garage.", "We changed our minds.", "We close at 5 so come early?"])
def test_what_moves_a_thing_or_asks_is_no_change_nor_opening_hours(text):
    assert statements(text) == []


@pytest.mark.parametrize("text", ["I'm expecting a call from the bank.", "I have a degree of confidence in this.",
                                  "My birthday party was fun.", "I have my reasons.", "I want my money back."])
def test_what_only_looks_like_a_date_a_child_or_a_degree_is_not_one(text):
    assert [st.category for st in statements(text)] not in (["date"], ["family"], ["skill"])


@pytest.mark.parametrize("text", ["I'm allergic to Mondays lol.", "I'm allergic to Mondays 😂", "I love hiking haha",
                                  "I never said I was vegetarian.", "I never told you I lived in Paris.",
                                  "I want to go home.", "I need to finish this.", "What do you think, is it good?",
                                  "We use it here.", "I have a question about my car, can you help?",
                                  "I've got a weird bug in my parser.", "I used to go there.", "I'm excited to see you!",
                                  "I'm part of the problem.", 'My friend said "I live in Berlin and work at Google".',
                                  "I had a question about that.", "I'm fine.", "I'm Ash.", "I'm a mess."])
def test_a_joke_a_denial_and_a_wish_of_the_moment_are_not_learnt(text):
    assert statements(text) == []


@pytest.mark.parametrize("text", ["I use it for work.", "I'm on it.", "I use to go there.", "I use it in this project.",
                                  "My handle is the best.", "My username is taken.", "Our Slack is busy."])
def test_what_names_no_tool_is_not_one(text):
    assert statements(text) == []


def test_a_change_of_health_with_nothing_to_go_into_hangs_on_a_health_topic():
    # the Anchors page read "User's change: not allergic shellfish"
    [said] = extract([(0, "I'm not allergic to shellfish, I just don't like prawns.")])
    assert (said.anchor, said.facets[0]) == ("User's health: not allergic shellfish", "change")
    [moved] = extract([(0, "I switched from Vim to Emacs.")])
    assert moved.anchor == "User's change: switched Vim Emacs"
