"""The knowledge graph without an LLM: anchors named by what they are, typed, and dated edges.

Statements are said as user turns, the observer's rule-based extractor distils them, curation
writes them (real SQLite file, no model needed): the people, places, organisations and
memberships they name become anchors, their ties become edges, and a move closes the old
`lives_in` edge instead of overwriting it.
"""

import pytest

from keepmind.engine.db import rows
from keepmind.engine.writepath.entities import graph_facts, introduced_by_tie
from support.provider import drain


def _say(engine, session, clock, *lines):
    for line in lines:
        engine.add_turn(session, user=line, assistant="Noted.")
    clock.advance(90_000)
    engine.writepath.scheduler.run_once(clock())
    return drain(engine)


def _anchors(engine) -> dict[str, str]:
    with engine.db.snapshot() as conn:
        return {r["canonical_name"]: r["anchor_type"] for r in rows(conn, "SELECT canonical_name, anchor_type"
                                                                          " FROM memory_anchors")}


def _edges(engine) -> list[tuple]:
    with engine.db.snapshot() as conn:
        return [(r["src"], r["relation"], r["dst"], r["valid_to"] is None) for r in rows(
            conn, "SELECT s.canonical_name AS src, e.relation, t.canonical_name AS dst, e.valid_to, e.valid_from"
                  " FROM memory_edges e JOIN memory_anchors s ON s.anchor_id = e.from_anchor_id"
                  " JOIN memory_anchors t ON t.anchor_id = e.to_anchor_id ORDER BY e.valid_from, e.relation")]


def test_people_places_organisations_and_memberships_become_typed_anchors_with_edges(engine, personal, clock):
    _say(engine, personal, clock, "My sister Anna lives in Lisbon.", "I work at Acme as a data engineer.",
         "I'm a United MileagePlus member.", "My home airport is SFO.")
    anchors = _anchors(engine)
    assert {k: anchors[k] for k in ("User", "Anna", "Lisbon", "Acme", "United MileagePlus", "SFO")} == {
        "User": "person", "Anna": "person", "Lisbon": "place", "Acme": "organisation",
        "United MileagePlus": "membership", "SFO": "place"}
    assert "anna lives lisbon" not in {a.lower() for a in anchors} and not any("acme as" in a.lower() for a in anchors)
    assert set(_edges(engine)) == {("User", "sister", "Anna", True), ("Anna", "lives_in", "Lisbon", True),
                                   ("User", "works_at", "Acme", True),
                                   ("User", "member_of", "United MileagePlus", True),
                                   ("User", "home_airport", "SFO", True)}
    bodies = {m.body for m in engine.list_memories(personal)}
    assert "User's sister Anna lives in Lisbon." in bodies and "User works at Acme as a data engineer." in bodies


def test_a_move_closes_the_old_lives_in_edge_and_opens_the_new_one(engine, personal, clock):
    _say(engine, personal, clock, "My sister Anna lives in Lisbon.")
    clock.advance(7 * 86_400_000)
    moved_at = clock()
    later = engine.open_session("personal", "work")
    _say(engine, later, clock, "Anna moved to Porto.")
    edges = _edges(engine)
    assert ("Anna", "lives_in", "Lisbon", False) in edges and ("Anna", "lives_in", "Porto", True) in edges
    assert ("User", "sister", "Anna", True) in edges   # the move retires nothing else
    with engine.db.snapshot() as conn:
        [old] = rows(conn, "SELECT e.valid_from, e.valid_to FROM memory_edges e JOIN memory_anchors t"
                           " ON t.anchor_id = e.to_anchor_id WHERE t.canonical_name='Lisbon'")
    assert old["valid_from"] < old["valid_to"] and old["valid_to"] >= moved_at
    # one living document about Anna holds both statements
    [anna] = [m for m in engine.list_memories(personal) if "Anna" in m.body]
    assert "Lisbon" in anna.body and "Porto" in anna.body
    assert anna.title == "Anna moved to Porto."  # its title says the newest fact, not the one it replaced


def test_a_sister_named_once_is_the_sister_a_later_statement_moves(engine, personal, clock):
    """"my sister lives in Porto" after "My sister Anna lives in Lisbon.": Anna moved."""
    _say(engine, personal, clock, "My sister Anna lives in Lisbon.")
    clock.advance(86_400_000)
    _say(engine, engine.open_session("personal", "work"), clock, "Actually my sister lives in Porto now.")
    edges = _edges(engine)
    assert ("Anna", "lives_in", "Lisbon", False) in edges and ("Anna", "lives_in", "Porto", True) in edges
    assert "User's sister" not in _anchors(engine)
    [anna] = engine.list_memories(personal)  # one living document, Anna's
    assert "Lisbon" in anna.body and "Porto" in anna.body


def test_a_sister_never_named_or_one_of_two_keeps_an_anchor_of_her_role(engine, personal, clock):
    _say(engine, personal, clock, "My brother lives in Berlin.")
    assert _anchors(engine)["User's brother"] == "person"
    assert {("User", "brother", "User's brother", True), ("User's brother", "lives_in", "Berlin", True)} <= set(
        _edges(engine))
    _say(engine, personal, clock, "My sister Anna lives in Lisbon.", "My sister Beth lives in Madrid.")
    clock.advance(86_400_000)
    _say(engine, personal, clock, "My sister moved to Porto.")
    edges = set(_edges(engine))
    # which sister moved is not known: neither is moved, the move is kept on the role's anchor
    assert {("Anna", "lives_in", "Lisbon", True), ("Beth", "lives_in", "Madrid", True),
            ("User's sister", "lives_in", "Porto", True)} <= edges


def test_a_second_membership_adds_an_edge_and_a_new_job_replaces_the_old(engine, personal, clock):
    _say(engine, personal, clock, "I'm a United MileagePlus member.", "I work at Acme as a data engineer.")
    clock.advance(86_400_000)
    _say(engine, engine.open_session("personal", "work"), clock, "I'm a Delta SkyMiles member.",
         "I work for Globex now.")
    edges = set(_edges(engine))
    assert {("User", "member_of", "United MileagePlus", True), ("User", "member_of", "Delta SkyMiles", True),
            ("User", "works_at", "Acme", False), ("User", "works_at", "Globex", True)} <= edges


@pytest.mark.parametrize("sentence,expected", [
    ("My best friend Tom works for Initech.", {("User", "best_friend", "Tom"), ("Tom", "works_at", "Initech")}),
    ("Priya is my cousin.", {("User", "cousin", "Priya")}),
    ("We moved to Denver in March.", {("User", "lives_in", "Denver")}),
    ("I grew up in Ohio.", {("User", "from", "Ohio")}),
    ("I always fly out of Boston Logan, it's my home airport.", {("User", "home_airport", "Boston Logan")}),
    ("I just adopted a rescue greyhound named Pixel!", {("User", "pet", "Pixel")}),
    ("I am a member of the Sierra Club.", {("User", "member_of", "Sierra Club")}),
    ("Yesterday I went to Paris with friends.", {("User", "visited", "Paris")}),
    ("At the fair I talked to someone named David.", {("User", "knows", "David")}),
    ("I got a new job at Initech.", {("User", "works_at", "Initech")}),
    ("We got another cat named Bailey too.", {("User", "pet", "Bailey")}),
    ("My dog is a beagle named Rolo.", {("User", "pet", "Rolo")}),  # was a topic, 'User's person: dog beagle named'
    ("Please remember that my cat is a quokka named Biscuit.", {("User", "pet", "Biscuit")}),
    ("Anthony and I went to a charity quiz.", {("User", "knows", "Anthony")}),
    ("Here is a photo from my trip to New York City!", {("User", "visited", "New York City")}),
    ("I took this at a lovely town called Woodhaven.", {("User", "visited", "Woodhaven")}),
    # a trip taken, a photo taken there, a stay: visits; a trip planned or asked about is none
    ("Took a short trip last week to Rome to clear my mind.", {("User", "visited", "Rome")}),
    ("My family and I went on a road trip to Oregon.", {("User", "visited", "Oregon")}),
    ("I have a picture from a vacation in Florida.", {("User", "visited", "Florida")}),
    ("Last year I took a solo trip and took this pic in Spain.", {("User", "visited", "Spain")}),
    ("I was in Chicago, it was awesome!", {("User", "visited", "Chicago")}),
    ("I went to a place in London a few years ago.", {("User", "visited", "London")}),
    ("I'm planning a trip to the East Coast.", set()),
    ("I'm going on a trip to Paris next week.", set()),
    ("How was your trip to Rome?", set()),
    ("I was in Game 7 mood all day.", set()),
    # a name set off by a comma: the pet, the person met, the home country
    ("And yup, I do- Oscar, my guinea pig.", {("User", "pet", "Oscar")}),
    ("Meet Luna, my new kitten!", {("User", "pet", "Luna")}),
    ("Thanks, my dog loves it.", set()),
    ("Yesterday I met this amazing woman, Jean, who had been through a lot.", {("User", "knows", "Jean")}),
    ("It is a gift from my grandma in my home country, Sweden.", {("User", "from", "Sweden")}),
    # who the user is, in the shortest words a user says it
    ("I live in Lisbon.", {("User", "lives_in", "Lisbon")}),
    ("I'm based in Berlin.", {("User", "lives_in", "Berlin")}),
    ("I'm from Canada.", {("User", "from", "Canada")}),
    ("Anna's from Spain.", {("Anna", "from", "Spain")}),
    ("My hamster is called Biscuit.", {("User", "pet", "Biscuit")}),
    ("My cat's name is Luna.", {("User", "pet", "Luna")}),
    ("I'm married to Sam.", {("User", "spouse", "Sam")}),
    ("We're engaged to be married next spring.", set()),
    ("I love hiking on weekends.", set()),
    ("I used to live in Paris.", set()),  # a past home is no lives_in
    ("I went to a support group last week.", set()),
])
def test_graph_facts_are_read_from_cue_phrases(sentence, expected):
    assert {(f.source.name, f.relation, f.target.name) for f in graph_facts(sentence)} == expected


def test_a_sentence_that_only_names_someone_is_kept_for_the_graph(engine, personal, clock):
    from keepmind.engine.writepath.extractor import statements

    [found] = statements("We got another cat named Bailey too.")
    assert (found.category, found.fact) == ("relation", "User and others got another cat named Bailey too.")
    _say(engine, personal, clock, "We got another cat named Bailey too.")
    assert ("User", "pet", "Bailey", True) in _edges(engine) and _anchors(engine)["Bailey"] == "pet"


def test_what_an_agent_stores_feeds_the_graph_as_what_it_observes_does(engine, personal, clock):
    """store_memory without a title: the memory hangs on what it is about and its ties are edges;
    a stored move closes the old edge, and the same turns observed later change nothing (they are
    duplicates of what was stored)."""
    engine.store_memory(personal, "", "My sister Anna lives in Lisbon.")
    drain(engine)
    clock.advance(86_400_000)
    engine.store_memory(personal, "", "Anna moved to Porto.")
    drain(engine)
    edges = _edges(engine)
    assert ("Anna", "lives_in", "Lisbon", False) in edges and ("Anna", "lives_in", "Porto", True) in edges
    assert ("User", "sister", "Anna", True) in edges
    assert _anchors(engine)["Anna"] == "person"
    [anna] = engine.list_memories(personal)
    assert anna.title == "Anna moved to Porto." and "Lisbon" in anna.body  # one living document, newest first
    # the same two turns said later: the move, said last, still holds (a restated old fact does not
    # win over the newer one said after it), and Anna is still one living document
    _say(engine, personal, clock, "My sister Anna lives in Lisbon.", "Anna moved to Porto.")
    current = {(a, r, b) for a, r, b, now in _edges(engine) if now}
    assert current == {("User", "sister", "Anna"), ("Anna", "lives_in", "Porto")}
    assert len(engine.list_memories(personal)) == 1
    labelled = engine.store_memory(personal, "Family", "My brother Tom works at Globex.")
    drain(engine)
    assert ("User", "brother", "Tom", True) in _edges(engine)  # a title of its own keeps its anchor
    assert next(m for m in engine.list_memories(personal) if m.title == "Family").id
    assert labelled.action == "queued"


def test_a_fact_an_agent_stored_in_the_users_words_is_not_kept_twice_when_observed(engine, personal, clock):
    """The agent stores "My sister…", the observer writes "User's sister…": the same fact, one memory."""
    engine.store_memory(personal, "", "My sister Anna lives in Lisbon.")
    drain(engine)
    [outcome] = _say(engine, personal, clock, "My sister Anna lives in Lisbon.")
    assert (outcome.action, outcome.reason) == ("skip", "contained")
    [anna] = engine.list_memories(personal)
    assert anna.body == "My sister Anna lives in Lisbon."


def test_a_memory_deleted_as_wrong_takes_its_edges_with_it_and_a_restore_brings_them_back(engine, personal, clock):
    [made] = _say(engine, personal, clock, "My home airport is SFO.")
    assert ("User", "home_airport", "SFO", True) in _edges(engine)
    engine.update(personal, made.memory_ids[0], delete=True, reason="wrong: it is OAK")
    assert ("User", "home_airport", "SFO", True) not in _edges(engine)  # no longer says it holds
    clock.advance(60_000)
    [tomb] = engine.deleted()[0]
    engine.restore(tomb["tombstone_id"])
    assert ("User", "home_airport", "SFO", True) in _edges(engine)


def test_a_restore_does_not_reopen_an_edge_something_said_since_replaced(engine, personal, clock):
    [made] = _say(engine, personal, clock, "My home airport is SFO.")
    engine.update(personal, made.memory_ids[0], delete=True, reason="wrong")
    clock.advance(60_000)
    _say(engine, personal, clock, "My home airport is OAK.")
    [tomb] = engine.deleted()[0]
    engine.restore(tomb["tombstone_id"])
    current = {(a, r, b) for a, r, b, now in _edges(engine) if now}
    assert ("User", "home_airport", "OAK") in current and ("User", "home_airport", "SFO") not in current


def test_the_shortest_statements_of_who_the_user_is_are_learnt_with_their_edges(engine, personal, clock):
    _say(engine, personal, clock, "I live in Lisbon.", "I'm married to Sam.", "My hamster is called Biscuit.",
         "Can you remember that I'm from Canada?")
    assert {("User", "lives_in", "Lisbon", True), ("User", "spouse", "Sam", True), ("User", "pet", "Biscuit", True),
            ("User", "from", "Canada", True)} <= set(_edges(engine))
    bodies = {m.body for m in engine.list_memories(personal)}
    assert {"User lives in Lisbon.", "User is married to Sam.", "User's hamster is called Biscuit.",
            "User is from Canada."} <= bodies


@pytest.mark.parametrize("first, then, now_there", [
    ("I live in Lisbon.", "I moved to Berlin last month.", "Berlin"),
    ("I work at Acme as a data engineer.", "I work at Globex now.", "Globex"),
    ("My home airport is SFO.", "My home airport is OAK now.", "OAK"),
])
def test_a_new_value_of_the_users_own_goes_into_the_memory_that_said_the_old_one(engine, personal, clock, first,
                                                                                  then, now_there):
    """A walk: after "I live in Lisbon." and "I moved to Berlin last month.", "Where do I live?"
    got "User lives in Lisbon.": two live memories, though the graph had closed the Lisbon edge.
    The move goes into the memory that said the old home, newest first, as Anna's move does."""
    _say(engine, personal, clock, first)
    clock.advance(7 * 86_400_000)
    _say(engine, engine.open_session("personal", "work"), clock, then)
    [memory] = engine.list_memories(personal)
    assert memory.body.index(now_there) < len(memory.body) // 2  # the newest fact first, the old one kept
    assert {e[2] for e in _edges(engine) if e[3] and e[0] == "User"} == {now_there}


@pytest.mark.parametrize("correction", ["My sister's name is Ana, not Anna.", "Actually, it's Ana, not Anna."])
def test_a_name_put_right_renames_the_anchor_and_the_memories_on_it(engine, personal, clock, correction):
    """A walk said "my sister's name is Ana, not Anna": a second person Ana appeared beside Anna,
    and "User's sister Anna lives in Lisbon." still named Anna."""
    _say(engine, personal, clock, "My sister Anna lives in Lisbon.")
    later = engine.open_session("personal", "work")
    _say(engine, later, clock, correction)
    anchors = _anchors(engine)
    assert "Ana" in anchors and "Anna" not in anchors
    assert ("User", "sister", "Ana", True) in _edges(engine) and ("Anna", "lives_in", "Lisbon", True) not in _edges(
        engine)
    assert ("Ana", "lives_in", "Lisbon", True) in _edges(engine)
    bodies = {m.body for m in engine.list_memories(later)}
    assert "User's sister Ana lives in Lisbon." in bodies and not any("Anna lives" in b for b in bodies)
    [doc] = [m for m in engine.list_memories(later) if m.body == "User's sister Ana lives in Lisbon."]
    revisions = engine.revisions(later, doc.id)
    assert [r["reason"] for r in revisions][:1] == ["curation:renamed Anna to Ana"]
    assert "Anna" in revisions[-1]["body"]  # what it said before stays in its history
    with engine.db.snapshot() as conn:  # the old name is the anchor's alias: a later "Anna" files under Ana
        assert [r["normalized_name"] for r in rows(conn, "SELECT normalized_name FROM anchor_aliases")] == ["anna"]


def test_a_name_put_right_for_someone_the_store_does_not_know_renames_nothing(engine, personal, clock):
    _say(engine, personal, clock, "My sister Anna lives in Lisbon.")
    _say(engine, engine.open_session("personal", "work"), clock, "Her name is spelled Marta, not Martha.")
    assert {"Anna", "Lisbon"} <= set(_anchors(engine))
    assert "User's sister Anna lives in Lisbon." in {m.body for m in engine.list_memories(personal)}


def test_a_name_put_right_that_no_anchor_holds_is_put_right_in_the_memories_that_say_it(engine, personal, clock):
    """A walk: "my daughter's name is Maia, not Maya" left "…two kids, Maya and Leo." (the rules
    named no one in it, so no anchor had the old name); "Maya Angelou" is someone else."""
    _say(engine, personal, clock, "We have two kids, Maya and Leo.", "My favourite poet is Maya Angelou.")
    later = engine.open_session("personal", "work")
    _say(engine, later, clock, "Actually, sorry, my daughter's name is Maia, not Maya.")
    bodies = {m.body for m in engine.list_memories(later)}
    assert "User and others have two kids, Maia and Leo." in bodies
    assert "My favourite poet is Maya Angelou." in bodies  # a preference keeps the user's own words


def test_a_new_job_files_the_living_document_under_the_new_employer(engine, personal, clock):
    """A walk: "I now work at Northwind Labs." went into the Acme document, which stayed under Acme."""
    _say(engine, personal, clock, "I work at Acme as a data engineer.")
    _say(engine, engine.open_session("personal", "work"), clock, "I now work at Northwind Labs.")
    assert ("User", "works_at", "Acme", False) in _edges(engine)
    assert ("User", "works_at", "Northwind Labs", True) in _edges(engine)
    with engine.db.snapshot() as conn:
        filed = {r["body"].split("\n")[0]: r["name"] for r in rows(
            conn, "SELECT d.body, a.canonical_name AS name FROM memory_documents d JOIN memory_anchors a"
                  " ON a.anchor_id = d.anchor_id WHERE d.deleted_at IS NULL")}
    assert filed == {"User now works at Northwind Labs.": "Northwind Labs"}


def test_a_new_job_said_with_the_old_one_files_the_document_under_the_new_employer(engine, personal, clock):
    """Its text still names Acme ("I left Acme and joined…"), which kept it under Acme."""
    _say(engine, personal, clock, "I work at Acme as a data engineer.")
    _say(engine, engine.open_session("personal", "work"), clock,
         "I left Acme and joined Northwind Labs as a platform engineer.")
    assert ("User", "works_at", "Acme", False) in _edges(engine)
    with engine.db.snapshot() as conn:
        [(name,)] = list(conn.execute("SELECT a.canonical_name FROM memory_documents d JOIN memory_anchors a"
                                      " ON a.anchor_id = d.anchor_id WHERE d.deleted_at IS NULL"))
    assert name == "Northwind Labs"


@pytest.mark.parametrize("text, facts", [
    ("I left Acme and joined Northwind Labs as a platform engineer.", [("User", "works_at", "Northwind Labs")]),
    ("I joined Google as an intern.", [("User", "works_at", "Google")]),
    ("I joined the Sierra Club as a member.", [("User", "member_of", "Sierra Club")]),
    # someone else's job is not the user's membership
    ("Anna joined Stripe as their CFO.", [("Anna", "works_at", "Stripe")]),
])
def test_a_job_joined_is_work_not_a_membership(text, facts):
    assert [(f.source.name, f.relation, f.target.name) for f in graph_facts(text)] == facts


def test_an_agents_third_person_fact_about_someone_feeds_the_graph(engine, personal):
    """A walk's agent stored "The user's dentist is Dr. Silva…" (store_memory, third person, as agents
    write): a memory, and no edge."""
    engine.store_memory(personal, "", "The user's dentist is Dr. Silva at the Elm Street clinic.")
    engine.store_memory(personal, "", "The user's manager is Katrin.")
    drain(engine)
    edges = _edges(engine)
    assert ("User", "dentist", "Dr. Silva", True) in edges and ("User", "manager", "Katrin", True) in edges


def test_two_people_of_one_name_in_family_ties_no_one_holds_together_are_two_anchors(engine, personal, clock):
    """"My daughter Anna…" after "My sister Anna…" made one Anna, the user's sister and daughter."""
    _say(engine, personal, clock, "My sister Anna lives in Lisbon.")
    _say(engine, engine.open_session("personal", "work"), clock, "My daughter Anna started school in Porto.")
    edges = _edges(engine)
    assert ("User", "sister", "Anna", True) in edges and ("User", "daughter", "Anna (daughter)", True) in edges
    assert ("User", "daughter", "Anna", True) not in edges
    with engine.db.snapshot() as conn:
        filed = dict(conn.execute("SELECT d.body, a.canonical_name FROM memory_documents d JOIN memory_anchors a"
                                  " ON a.anchor_id = d.anchor_id WHERE d.deleted_at IS NULL"))
    assert filed == {"User's sister Anna lives in Lisbon.": "Anna",
                     "User's daughter Anna started school in Porto.": "Anna (daughter)"}
    # a friend can be family: "Anna is my best friend." is the sister still
    _say(engine, engine.open_session("personal", "work"), clock, "Anna is my best friend.")
    assert ("User", "best_friend", "Anna", True) in _edges(engine)


def test_someone_introduced_by_a_tie_outside_the_family_is_not_the_one_who_is_family(engine, personal, clock):
    """A walk: "My friend Marta…" after "My wife Marta…" made one Marta, the user's wife and friend."""
    _say(engine, personal, clock, "My wife Marta is a nurse.")
    _say(engine, engine.open_session("personal", "work"), clock, "My friend Marta lives in Porto.")
    edges = _edges(engine)
    assert ("User", "wife", "Marta", True) in edges and ("User", "friend", "Marta (friend)", True) in edges
    assert ("User", "friend", "Marta", True) not in edges
    assert ("Marta (friend)", "lives_in", "Porto", True) in edges
    # saying what the tie is, of the one already known, is not someone else
    _say(engine, engine.open_session("personal", "work"), clock, "Marta is my best friend.")
    assert ("User", "best_friend", "Marta", True) in _edges(engine)


def test_a_friend_named_later_as_family_stays_one_person(engine, personal, clock):
    """A friend can become a girlfriend: only a tie outside the family, of one who is family, splits."""
    _say(engine, personal, clock, "My friend Marta lives in Porto.")
    _say(engine, engine.open_session("personal", "work"), clock, "My girlfriend Marta loves hiking.")
    edges = _edges(engine)
    assert ("User", "friend", "Marta", True) in edges and ("User", "girlfriend", "Marta", True) in edges


@pytest.mark.parametrize("text, relation, name, said", [
    ("My friend Marta lives in Porto.", "friend", "Marta", True),
    ("User's old colleague Marta called.", "colleague", "Marta", True),
    ("My best friend, Marta, visited.", "best_friend", "Marta", True),
    ("My co-worker Marta is kind.", "co_worker", "Marta", True),
    ("Marta is my best friend.", "best_friend", "Marta", False),
    ("My friend Martin lives in Porto.", "friend", "Marta", False),
])
def test_introduced_by_tie(text, relation, name, said):
    assert introduced_by_tie(text, relation, name) is said


@pytest.mark.parametrize("text, facts", [
    # a walk: "Dr" became a person, the user's dentist
    ("My dentist is Dr. Ruiz <em>on</em> Rua Augusta & she's great", []),
    ("My dentist is Dr. Ruiz on Rua Augusta.", [("User", "dentist", "Dr. Ruiz")]),
    ("My doctor is Dr Patel.", [("User", "doctor", "Dr Patel")]),
    ("I live in Newcastle upon Tyne.", [("User", "lives_in", "Newcastle upon Tyne")]),
])
def test_an_honorific_alone_is_no_ones_name(text, facts):
    assert [(f.source.name, f.relation, f.target.name) for f in graph_facts(text)] == facts


def test_someone_elses_tie_links_the_two_people(engine, personal, clock):
    """A walk: "Priya's brother Arjun works at Google in London." made Arjun no one's brother."""
    _say(engine, personal, clock, "My wife Priya is a nurse.", "Priya's brother Arjun works at Google in London.")
    edges = _edges(engine)
    assert ("Priya", "brother", "Arjun", True) in edges and ("Arjun", "works_at", "Google", True) in edges
    assert ("User", "wife", "Priya", True) in edges and ("User", "brother", "Arjun", True) not in edges
    assert [(f.source.name, f.relation, f.target.name) for f in graph_facts("Monday's coach Bill was late.")] == []


def test_a_condition_put_right_of_someone_goes_into_the_memory_that_said_it(engine, personal, clock):
    """A walk: "Tom isn't gluten intolerant, it's his girlfriend Sofia who is." stored nothing, and
    recall went on giving "…Tom…, he's gluten intolerant." to a dinner for Tom."""
    from keepmind.engine.stance import caution, current_part

    _say(engine, personal, clock, "My best friend Tom is gluten intolerant.")
    _say(engine, engine.open_session("personal", "work"), clock,
         "Oh wait, my mistake - Tom isn't gluten intolerant, it's his girlfriend Sofia who is.")
    [memory] = engine.list_memories(personal)
    assert current_part(memory.body) == "Tom isn't gluten intolerant, it's his girlfriend Sofia who is."
    assert "User's best friend Tom is gluten intolerant." in memory.body  # what it said before, as history
    assert not caution(memory.body)


def test_the_users_own_condition_put_right_goes_into_the_memory_that_said_it(engine, personal, clock):
    """A walk: "I'm not allergic to shellfish, I just don't like prawns." stored nothing (its "just"
    hid the dislike too), and recall went on giving the allergy to every seafood task."""
    from keepmind.engine.stance import caution, current_part

    _say(engine, personal, clock, "I'm allergic to shellfish.", "I'm allergic to peanuts.")
    _say(engine, engine.open_session("personal", "work"), clock,
         "I'm not allergic to shellfish, I just don't like prawns.")
    memories = {current_part(m.body): m.body for m in engine.list_memories(personal)}
    assert set(memories) == {"I'm not allergic to shellfish, I just don't like prawns.", "I'm allergic to peanuts."}
    assert "I'm allergic to shellfish." in memories["I'm not allergic to shellfish, I just don't like prawns."]
    assert not caution(memories["I'm not allergic to shellfish, I just don't like prawns."])
    assert caution(memories["I'm allergic to peanuts."])  # the other allergy is untouched


@pytest.mark.parametrize("text, said", [
    ("I'm not allergic to shellfish, I just don't like prawns.", False), ("I'm allergic to peanuts, not tree nuts.", True),
    ("I don't eat gluten because I'm coeliac.", True), ("Never add peanuts: I'm allergic.", True),
    ("I have no allergies.", False), ("I'm not sure, but I think I'm allergic to cats.", True)])
def test_a_caution_is_read_in_the_clause_that_names_it(text, said):
    from keepmind.engine.stance import caution

    assert caution(text) is said


@pytest.mark.parametrize("said, fact, pet", [
    ("We got a puppy! A cocker spaniel called Biscuit.", "User and others got a puppy, a cocker spaniel called Biscuit.",
     "Biscuit"),
    ("I got a puppy, a cocker spaniel called Biscuit.", "User got a puppy, a cocker spaniel called Biscuit.", "Biscuit"),
    ("I adopted a cat. The Maine Coon named Miso.", "User adopted a cat, the Maine Coon named Miso.", "Miso")])
def test_a_pet_named_by_its_breed_after_the_pet_word_is_the_users(engine, personal, clock, said, fact, pet):
    """A walk: "We got a puppy! A cocker spaniel called Biscuit." kept nothing (a breed is no pet
    word, and the name came in a sentence of its own)."""
    from keepmind.engine.writepath.extractor import statements

    assert [s.fact for s in statements(said)] == [fact]
    _say(engine, personal, clock, said)
    assert ("User", "pet", pet, True) in _edges(engine) and _anchors(engine)[pet] == "pet"
    assert [s.fact for s in statements("We went to the park. A place called Hyde Park.")] == []  # no pet before it
