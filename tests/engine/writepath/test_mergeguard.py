"""The merge guard: careless merges that drop a number, a date or a name fall back to append."""

import pytest

from keepmind.engine.clock import parse_time
from keepmind.engine.writepath.mergeguard import (
    append_body,
    check_merge,
    contains_statement,
    load_bearing_tokens,
    previously,
)

AS_OF = parse_time("2026-01-08T00:00:00Z")


def test_load_bearing_tokens_cover_numbers_dates_urls_versions_identifiers_and_names():
    text = ("Deploy notes: the API moved to https://api.example.com/v2 on 2026-01-08 (8 May 2023 before). "
            "Set MAX_WORKERS to 12, use numpy 1.26.4, call fetch_prices() via priceTracker in "
            "/srv/app/config.yaml; it costs $89 and takes 30 ms. Ask Priya Raman.")
    tokens = load_bearing_tokens(text)
    for expected in ("https://api.example.com/v2", "2026-01-08", "8 may 2023", "max_workers", "12",
                     "1.26.4", "fetch_prices", "pricetracker", "/srv/app/config.yaml", "$89", "30 ms",
                     "priya", "raman"):
        assert expected in tokens, expected
    assert "deploy" not in tokens and "the" not in tokens  # sentence-start capitals and words are not names


def test_dropping_a_number_fails():
    sources = ["The office has 42 desks and 3 meeting rooms.", "The office has 42 desks and a kitchen."]
    result = check_merge(sources, "The office has desks, meeting rooms and a kitchen.")
    assert not result.passed and {"42", "3"} <= set(result.missing)


def test_dropping_a_date_fails():
    sources = ["Passport expires 2027-04-30.", "Passport renewal was filed on 2026-01-05."]
    result = check_merge(sources, "Passport expires 2027-04-30; renewal filed.")
    assert not result.passed and "2026-01-05" in result.missing


def test_dropping_a_name_fails():
    sources = ["The design review is run by Priya Raman.", "The design review is every Thursday with Tomasz."]
    result = check_merge(sources, "The design review is run every Thursday by the design lead.")
    assert not result.passed and {"priya", "raman", "tomasz"} <= set(result.missing)


def test_collapsed_merge_fails_on_length_even_when_tokens_survive():
    long = "Deploys: " + " ".join(f"step {i} checks the service health and waits." for i in range(1, 4))
    result = check_merge([long], "Deploys: step 1 2 3.")
    assert result.retention == 1.0 and not result.passed and "length" in result.reason


def test_lossless_union_passes():
    sources = ["User's home airport is Boston Logan (BOS).", "User flies Delta from BOS, terminal A."]
    merged = "User's home airport is Boston Logan (BOS); they fly Delta from there, terminal A."
    assert check_merge(sources, merged).passed


def test_previously_as_of_pattern_keeps_the_superseded_value_and_passes():
    old = "Sony WH-1000XM5 price at Best Buy: $349."
    new = "Sony WH-1000XM5 price at Best Buy: $329."
    merged = previously(new, "$349", AS_OF)
    assert merged == "Sony WH-1000XM5 price at Best Buy: $329 (previously $349, as of 2026-01-08)."
    assert check_merge([old, new], merged).passed
    assert not check_merge([old, new], new).passed  # the overwrite would lose $349


def test_append_puts_the_newest_first_under_a_dated_separator():
    body = append_body("Price: $349.", "Price: $329.", AS_OF)
    assert body == "Price: $329.\n\n---\n_[earlier, as of 2026-01-08]_\nPrice: $349."
    assert contains_statement(body, "price: $349") and not contains_statement(body, "Price: $300.")


def test_a_merge_that_echoes_the_curator_prompt_fails_though_it_keeps_every_token():
    from keepmind.engine.writepath import curator
    old = "User's home airport is Boston Logan (BOS)."
    new = "User now flies out of Providence (PVD)."
    prompt = curator.build_prompt("Home airport", new, "home airport", AS_OF,
                                  [{"id": "doc-" + "a" * 32, "anchor": "home airport", "updated_at": AS_OF,
                                    "title": "Home airport", "body": old}])
    result = check_merge([old, new], prompt)
    assert result.retention == 1.0 and not result.passed and "prompt" in result.reason


def test_a_merge_much_longer_than_its_sources_fails_and_words_that_sources_hold_pass():
    sources = ["Standup is at 09:30 in room 4.", "Standup moved to 10:00."]
    padded = "Standup moved to 10:00 (previously 09:30) in room 4. " + "It is a very important meeting. " * 10
    assert not check_merge(sources, padded).passed and "times" in check_merge(sources, padded).reason
    quoted = ["The form asks for anchor: the team name.", "Anchor is the team name now."]
    assert check_merge(quoted, "The form asks for anchor: the team name (the team name now).").passed


def test_a_merge_that_drops_facts_said_in_plain_lowercase_words_fails():
    sources = ["I am allergic to peanuts and shellfish.", "I am allergic to penicillin too."]
    result = check_merge(sources, "I am allergic to penicillin and pollen.")
    assert result.retention == 1.0 and not result.passed and "content words" in result.reason
    assert {"peanut", "shellfish"} <= set(result.missing)
    assert check_merge(sources, "I am allergic to peanuts, shellfish and penicillin.").passed


def test_unsaid_names_what_a_proposal_holds_that_no_candidate_does():
    from keepmind.engine.writepath.mergeguard import unsaid
    candidates = ["User deploys with Terraform 1.9; state lives in the bucket tf-state-prod."]
    assert {"1.10", "tf-state-prod-eu"} <= set(
        unsaid(candidates, "I deploy with Terraform 1.10 now, state in the bucket tf-state-prod-eu."))
    assert unsaid(candidates, "User deploys with Terraform 1.9.") == ()


@pytest.mark.parametrize("sources, merged", [
    # a walk's fake curator: the long document kept 90% of its words, and "allergic to chicken" went
    (["User's beagle Rolo is allergic to chicken. User's beagle Rolo is 3 years old and weighs 12 kg. "
      "User's beagle Rolo now weighs 14 kg.", "User's beagle Rolo's vet is Dr. Silva at Clinica Azul."],
     "User's beagle Rolo now weighs 14 kg (previously 12 kg) and is 3 years old. Rolo's vet is Dr. Silva at "
     "Clinica Azul. User's beagle Rolo is a beagle."),
    # the README's own example
    (["User is allergic to peanuts and shellfish and lives in Lisbon with partner Sam, who works at Acme as a nurse.",
      "User started cycling to work every Tuesday morning."],
     "User is allergic, lives in Lisbon with partner Sam, who works at Acme as a nurse, and started cycling to "
     "work every Tuesday morning."),
])
def test_two_dropped_content_words_fail_a_merge_however_long_its_sources(sources, merged):
    result = check_merge(sources, merged)
    assert not result.passed and "content words" in result.reason


def test_one_reworded_word_is_no_lost_fact():
    assert check_merge(["User lives in Lisbon and works at Acme."], "User lives in Lisbon and is employed at Acme.").passed
