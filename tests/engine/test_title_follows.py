"""A title that says the memory's fact follows an edit of it: "User's sister Anna lives in Lisbon."
over a body that now says Porto told the agent both (the recall block read "Lisbon. … Porto."),
while a person's own label stays what they wrote."""

from __future__ import annotations


def test_a_replacement_in_the_fact_is_made_in_its_title_too(engine, personal):
    doc = engine.store(personal, "User's sister Anna lives in Lisbon.", "User's sister Anna lives in Lisbon.").id
    engine.update(personal, doc, old_text="Lisbon", new_text="Porto")
    item = engine.get(personal, [doc]).items[0]
    assert (item.title, item.body) == ("User's sister Anna lives in Porto.", "User's sister Anna lives in Porto.")


def test_a_rewrite_under_its_own_opening_retitles_and_a_label_stays(engine, personal):
    rec = engine.store(personal, "I avoid flying on weekends.", "I avoid flying on weekends.",
                       memory_class="evidence").id
    labelled = engine.store(personal, "Travel", "I avoid night trains.").id
    engine.update(personal, rec, new_content="I avoid flying on weekends, and on Mondays.")
    engine.update(personal, labelled, new_content="I avoid night buses.")
    assert engine.get(personal, [rec]).items[0].title == "I avoid flying on weekends, and on Mondays."
    assert engine.get(personal, [labelled]).items[0].title == "Travel"


def test_an_explicit_title_is_kept(engine, personal):
    doc = engine.store(personal, "Anna lives in Lisbon.", "Anna lives in Lisbon.").id
    engine.update(personal, doc, old_text="Lisbon", new_text="Porto", title="Where Anna lives")
    assert engine.get(personal, [doc]).items[0].title == "Where Anna lives"


def test_a_nul_in_a_rewrites_text_is_blamed_on_the_text_not_on_the_title_made_from_it(engine, personal):
    import pytest

    from keepmind.engine import InvalidInput

    doc = engine.store(personal, "", "Anna lives in Lisbon.").id  # its title is its opening
    with pytest.raises(InvalidInput, match=r"^content holds a control or invisible character \(NUL"):
        engine.update(personal, doc, new_content="Anna lives in\x00 Porto.")
    with pytest.raises(InvalidInput, match=r"^content holds"):
        engine.update(personal, doc, old_text="Lisbon", new_text="Po\x00rto")
