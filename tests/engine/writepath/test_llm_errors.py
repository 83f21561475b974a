"""What a failed LLM call leaves behind: words in /status, a short redacted excerpt in the log, and
every reply shape a provider may send either used or counted as a failure (never an exception)."""

import json
import logging

import pytest

from keepmind.engine.db import rows
from keepmind.engine.writepath.llm import ChatClient, LlmConfig, LlmError
from support.provider import drain

CURATOR = "You curate a long-term memory"
OBSERVER = "You distil a conversation"
KEY = "sk-proj-" + "abcdefghijklmnopqrstuvwx"  # built here so no scanner mistakes the test for a leak


@pytest.fixture
def client(provider):
    c = ChatClient(LlmConfig(base_url=provider.base_url, model="m1", api_key="k", timeout_s=2.0))
    yield c
    c.close()


def _logged(caplog) -> str:
    return "\n".join(r.getMessage() for r in caplog.records)


def _reasons(engine) -> str:
    return "\n".join(engine.status()["reasons"])


def test_a_curator_reply_echoing_the_prompt_is_never_quoted_in_status_or_logged_whole(llm_engine, provider,
                                                                                      clock, caplog):
    session = llm_engine.open_session("personal", "work")
    llm_engine.store_memory(session, "Editor", "I prefer Neovim with the gruvbox theme.")
    drain(llm_engine)
    echo = ("PROPOSED title: Editor\ncontent: I prefer Neovim for everything, with lazy.nvim, telescope, "
            "treesitter and a dozen other plugins configured over many evenings; my therapist Dr. Hale "
            "says this is fine.")
    provider.script(CURATOR, echo)
    llm_engine.store_memory(session, "Editor", "I use Neovim for notes too.")
    with caplog.at_level(logging.INFO, logger="keepmind"):
        outcome = llm_engine.writepath.curation.run_once(clock())
    assert outcome.status == "retry" and len(provider.calls(CURATOR)) == 1
    reasons = _reasons(llm_engine)
    assert "curation LLM failing" in reasons and "the reply held no decision" in reasons
    assert "Neovim" not in reasons and "Dr. Hale" not in reasons and "PROPOSED" not in reasons
    assert "Neovim" not in llm_engine.writepath.llm.health().last_error
    logged = _logged(caplog)
    assert "memory_llm_error" in logged and "no decision in the reply" in logged  # the log names the failure
    # and none of the reply it quotes: a log file is out of an erase's reach (a walk found memory text there)
    assert "PROPOSED" not in logged and "Dr. Hale" not in logged and "Neovim" not in logged


def test_a_provider_body_echoing_the_api_key_shows_in_no_status_log_or_checkpoint(llm_engine, provider, clock,
                                                                                  caplog):
    session = llm_engine.open_session("team", "work")
    llm_engine.store_memory(session, "Deploys", "Deploys go out on Tuesdays.")
    drain(llm_engine)
    provider.script(CURATOR, ("status", 401, f"Incorrect API key provided: {KEY}. Find your key online."))
    queued = llm_engine.store_memory(session, "Deploys", "Deploys need a second reviewer.")
    with caplog.at_level(logging.INFO, logger="keepmind"):
        outcome = llm_engine.writepath.curation.run_once(clock())
    assert outcome.status == "dead"  # a refusal is dead-lettered at once
    reasons = _reasons(llm_engine)
    assert "HTTP 401 from the provider (check the API key: memory.llm.api_key_env names its variable)" in reasons and KEY not in reasons
    assert "Incorrect API key" not in reasons  # the provider's words stay out of /status too
    assert KEY not in llm_engine.writepath.llm.health().last_error
    assert "HTTP 401" in _logged(caplog) and KEY not in _logged(caplog)
    assert KEY not in (llm_engine.checkpoint(queued.checkpoint_id)["last_error"] or "")


def test_the_api_key_in_an_error_body_never_reaches_the_error_a_caller_gets(client, provider, caplog):
    provider.script("sys", ("status", 401, f"bad key {KEY}"))
    with caplog.at_level(logging.WARNING, logger="keepmind"), pytest.raises(LlmError) as err:
        client.complete("sys", "user")
    assert err.value.message.startswith("HTTP 401") and err.value.lasting  # still read as a refusal
    assert KEY not in str(err.value) and "[secret removed]" in str(err.value)
    assert client.status_reasons() == ["curation LLM failing (its last call failed, counting the observer's and curation's, since "
                                       "the last success; the last was curation's): "
                                       "HTTP 401 from the provider (check the API key: memory.llm.api_key_env names its variable)"]


def test_a_reply_in_text_parts_is_joined(client, provider):
    parts = [{"type": "text", "text": "CREATE"}, {"type": "text", "text": " now"}]
    provider.script("sys", ("raw", {"choices": [{"index": 0, "finish_reason": "stop",
                                                 "message": {"role": "assistant", "content": parts}}]}))
    reply = client.complete("sys", "user")
    assert reply.text == "CREATE now" and client.health().failures == 0


def _completion(message):
    return ("raw", {"choices": [{"index": 0, "finish_reason": "stop", "message": message}]})


UNUSABLE = {
    "null message": _completion(None),
    "number content": _completion({"role": "assistant", "content": 42}),
    "object content": _completion({"role": "assistant", "content": {"text": "{}"}}),
    "parts without text": _completion({"role": "assistant", "content": [{"type": "image_url", "image_url": {}}]}),
    "no choices": ("raw", {"id": "x"}),
}


@pytest.mark.parametrize("reply", UNUSABLE.values(), ids=UNUSABLE.keys())
def test_an_unusable_reply_shape_is_a_counted_failure(client, provider, reply):
    provider.script("sys", reply)
    with pytest.raises(LlmError) as err:
        client.complete("sys", "user")
    assert err.value.kind in ("protocol", "empty")
    assert client.health().failures == 1 and client.status_reasons()


def test_the_observer_takes_a_reply_in_text_parts(llm_engine, provider, clock):
    proposal = {"operation": "upsert_document", "memoryClass": "durable_fact", "subjectKind": "user",
                "subjectValue": "user", "anchor": {"canonicalName": "seat", "anchorType": "preference"},
                "title": "Seat preference", "content": "User prefers aisle seats.", "aliases": ["Seat"],
                "facets": ["preference"], "confidence": 0.9}
    text = json.dumps({"proposals": [proposal]})
    provider.script(OBSERVER, _completion({"role": "assistant",
                                           "content": [{"type": "text", "text": text[:40]},
                                                       {"type": "text", "text": text[40:]}]}))
    session = llm_engine.open_session("personal", "work")
    llm_engine.add_turn(session, user="Aisle please, always.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert run.status == "completed" and run.decided_by == "model:scripted-1" and len(run.checkpoint_ids) == 1


def test_a_null_message_is_a_failed_observer_run_that_backs_off_not_a_call_a_second(llm_engine, provider, clock):
    provider.script(OBSERVER, _completion(None))
    session = llm_engine.open_session("personal", "work")
    llm_engine.add_turn(session, user="I'm a member of the Sierra Club.")
    clock.advance(90_000)
    [run] = llm_engine.writepath.scheduler.run_once(clock())
    assert run.status == "failed" and "protocol" in run.error
    clock.advance(1_000)
    assert llm_engine.writepath.scheduler.run_once(clock()) == []  # backing off: no second call
    assert len(provider.calls(OBSERVER)) == 1
    assert llm_engine.status()["status"] == "degraded"
    assert "the last was the observer's" in _reasons(llm_engine)
    with llm_engine.db.snapshot() as conn:
        assert [r["status"] for r in rows(conn, "SELECT status FROM observer_runs")] == ["failed"]


def test_status_and_doctor_say_one_remedy_for_each_answer_of_the_provider():
    from keepmind.engine.writepath.doctor import _remedy
    from keepmind.engine.writepath.llm import failure_words

    for code in (401, 403, 404, 408, 422, 429, 500, 502):
        words = failure_words("curation", "http", code, 60)
        assert words.endswith(f"({_remedy(f'HTTP {code}: the body')})"), code
    assert "memory.llm.model" in _remedy("HTTP 404") and "timeout_seconds" not in _remedy("HTTP 404")
    assert "api_key_env" in _remedy("HTTP 401") and "refused" in _remedy("HTTP 400")
    assert _remedy("connection refused") == "check the server and memory.llm.timeout_seconds"


def test_a_key_of_no_known_shape_echoed_by_the_provider_is_removed_too(provider, caplog):
    """A walk's gateway key matched no secret pattern: echoed in a 401 body it reached the log, the
    checkpoint and the Backlog page. Keepmind holds the key it sends: it is removed whatever it looks like."""
    plain = "plainkey-Zebra-991"
    client = ChatClient(LlmConfig(base_url=provider.base_url, model="m1", api_key=plain, timeout_s=2.0))
    provider.script("sys", ("status", 401, f"Incorrect API key provided: {plain}. Find your key in settings."))
    with caplog.at_level(logging.WARNING, logger="keepmind"), pytest.raises(LlmError) as err:
        client.complete("sys", "user")
    assert plain not in str(err.value) and "[secret removed]" in str(err.value)
    assert plain not in _logged(caplog) and "HTTP 401" in _logged(caplog)
    client.close()
