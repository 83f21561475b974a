"""The Backlog's notice after a Retry reads as a sentence and says what curation did: with the
curation LLM failing, "Retried: kept as a new memory (the curation LLM failed, so the rules
decided)." — it read "Retried The proposal: curated (new (the LLM failed))."."""

from __future__ import annotations

import pytest

from keepmind.engine.wording import outcome_words
from support.pages import signed_in
from support.provider import ScriptedProvider


@pytest.fixture
def provider():
    scripted = ScriptedProvider().start()
    yield scripted
    scripted.stop()


@pytest.mark.parametrize(("code", "said"), [
    ("llm_failed_nominee_create", "kept as a new memory (the curation LLM failed, so the rules decided)"),
    ("llm_failed_same_anchor_append",
     "added to the memory on the same subject (the curation LLM failed, so the rules decided)"),
    ("no_llm_nominee_create", "kept as a new memory (no curation LLM is configured, so the rules decided)"),
    ("model_create", "curated — new: the model found nothing it belongs with"),
    (None, "curated"),
])
def test_what_curation_did_reads_as_the_end_of_a_sentence(code, said):
    assert outcome_words(code) == said


def test_a_retry_that_the_rules_decided_says_so_in_one_sentence(make_engine, provider, clock):
    engine = make_engine(memory__llm__base_url=provider.base_url, memory__llm__model="scripted-1",
                         memory__llm__timeout_seconds=5, memory__curation__max_attempts=1)
    provider.default = ("status", 503, "overloaded")
    sid = engine.open_session("personal", "work")
    engine.store(sid, "Laptop", "User's laptop is a ThinkPad X1 Carbon.", anchor="Laptop")
    checkpoint = engine.store_memory(sid, "Laptop", "User's laptop has 32 GB of RAM.").checkpoint_id
    engine.writepath.curation.drain(clock())
    web, _ = signed_in(engine)
    page = web.get(f"/checkpoints?retried={checkpoint}").get_data(as_text=True)
    said = " ".join(page.split())
    assert "Retried “Laptop”: added to the memory on the same subject (the curation LLM failed, so the rules decided)." in said
    assert "Retried The proposal" not in said and "((" not in said and "))" not in said
