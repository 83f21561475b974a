"""The chat-completions client against the scripted loopback provider."""

import pytest

from keepmind.engine.writepath.llm import ChatClient, LlmConfig, LlmError, clean_reply, first_json_object


@pytest.fixture
def client(provider):
    c = ChatClient(LlmConfig(base_url=provider.base_url + "/", model="m1", api_key="k", timeout_s=0.5))
    yield c
    c.close()


def test_reply_is_cleaned_and_hashed(client, provider):
    provider.script("sys", "<think>long reasoning</think>\n```\nCREATE\n```")
    reply = client.complete("sys", "user")
    assert reply.text == "CREATE" and reply.raw.startswith("<think>") and len(reply.sha256) == 64
    assert provider.requests[0]["_path"] == "/v1/chat/completions"
    assert client.health().calls == 1 and client.health().failures == 0


@pytest.mark.parametrize("reply,kind", [
    (("status", 429, "slow down"), "http"),
    (("raw", {"nothing": "here"}), "protocol"),
    ("<think>thinking forever and never answering", "empty"),
    ("hang", "timeout"),
])
def test_every_failure_is_recorded(client, provider, reply, kind):
    provider.script("sys", reply)
    with pytest.raises(LlmError) as err:
        client.complete("sys", "user")
    provider.release.set()
    assert err.value.kind == kind
    health = client.health()
    assert health.failures == 1 and health.consecutive_failures == 1 and health.last_error.startswith(kind)
    assert client.status_reasons()


def test_connection_refused_is_a_recorded_failure():
    c = ChatClient(LlmConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=1.0))
    with pytest.raises(LlmError) as err:
        c.complete("s", "u")
    assert err.value.kind == "connect" and c.health().failures == 1
    c.close()


def test_clean_reply_variants():
    assert clean_reply("</think>SKIP") == "SKIP"  # server ate the opening tag
    assert clean_reply("<thinking>x</thinking> UPDATE doc-1") == "UPDATE doc-1"
    assert clean_reply("CREATE\n<think>dangling") == "CREATE"
    assert clean_reply("keep `code` and ```inline``` as is") == "keep `code` and ```inline``` as is"


def test_first_json_object_skips_prose_and_broken_objects():
    assert first_json_object('Sure! {"a": {"b": "}"}} trailing {"c": 1}') == {"a": {"b": "}"}}
    assert first_json_object('{broken {"ok": true}') == {"ok": True}
    assert first_json_object("no json") is None
