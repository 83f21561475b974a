"""The curation LLM's address is checked when it is saved (the page and the file alike), and a
setting saved back to what the running Keepmind uses is not said to wait for the next start."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

from keepmind.desktop.cli import main as cli
from keepmind.engine.errors import SettingsError
from keepmind.engine.settings import load, validate
from support.pages import sign_in

CURATION = "Curation LLM"


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:11434/v1", "http://[::1]:8080/v1", "http://192.168.1.20:8000/v1", "http://10.0.0.7/v1",
    "https://172.16.4.2/openai/v1/", "HTTP://127.0.0.1:1234",
])
def test_an_http_address_with_a_host_is_accepted_loopback_and_private_ones_too(url):
    assert validate({"memory.llm.base_url": url})["memory.llm.base_url"] == url


@pytest.mark.parametrize("url", [
    "not a url", "127.0.0.1:11434/v1", "ftp://10.0.0.7/v1", "http://", "http:///v1", "http://10.0.0.7:99999/v1",
    "http://user:pw@10.0.0.7/v1", "http://10.0.0.7/v1?key=1", "http://10.0.0.7/v1#x", "http://10.0.0 .7/v1", "", 42,
])
def test_anything_else_is_refused_naming_the_key_and_what_it_accepts(url):
    with pytest.raises(SettingsError) as caught:
        validate({"memory.llm.base_url": url})
    message = caught.value.message
    assert "memory.llm.base_url" in message and "an http:// or https:// address with a host name or IP address" \
        in message and "or null" in message
    assert "Traceback" not in message


def test_a_file_with_a_bad_address_is_refused_at_start_not_at_the_first_curation(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "keepmind.json").write_text(json.dumps({"memory": {"llm": {"base_url": "not a url"}}}))
    with pytest.raises(SettingsError, match="memory.llm.base_url"):
        load(home / "keepmind.json")
    assert cli(["doctor", "--home", str(home)]) != 0
    said = capsys.readouterr()
    assert "memory.llm.base_url" in said.out + said.err and "http:// or https://" in said.out + said.err


def save(client, token, group: str, **fields):
    data = {"csrf_token": token, "group": group, **{k.replace("__", "."): v for k, v in fields.items()}}
    return client.post("/settings", data=data, headers={"HX-Request": "true"})


def notice(response) -> str:
    found = re.search(r'<p class="notice[^"]*" role="(?:status|alert)">(.*?)</p>', response.get_data(as_text=True), re.S)
    return unescape(" ".join(found.group(1).split()))


def test_the_settings_page_refuses_a_bad_address_and_writes_nothing(client, engine):
    token = sign_in(client, engine)
    r = save(client, token, CURATION, memory__llm__base_url="not a url")
    assert r.status_code == 422
    said = notice(r)
    assert said.startswith('setting \'memory.llm.base_url\' is "not a url"; allowed: an http:// or https:// address')
    assert "Saved" not in said and not engine.settings_path.exists()
    r = save(client, token, CURATION, memory__llm__base_url="http://192.168.1.20:8000/v1")
    assert r.status_code == 200 and notice(r) == "Saved. At the next start: memory.llm.base_url."
    assert json.loads(engine.settings_path.read_text())["memory.llm.base_url"] == "http://192.168.1.20:8000/v1"


def test_saving_back_the_value_keepmind_runs_with_does_not_wait_for_the_next_start(client, engine):
    token = sign_in(client, engine)
    assert engine.settings["memory.llm.model"] is None and engine.settings["memory.llm.timeout_seconds"] == 60
    r = save(client, token, CURATION, memory__llm__model="qwen3", memory__llm__timeout_seconds="90")
    assert notice(r) == "Saved. At the next start: memory.llm.model, memory.llm.timeout_seconds."
    assert "until it starts again" in r.get_data(as_text=True)
    r = save(client, token, CURATION, memory__llm__model="", memory__llm__timeout_seconds="90")  # the model back
    assert notice(r) == "Saved. Applied at once: memory.llm.model."
    assert "until it starts again" in r.get_data(as_text=True)  # the timeout still waits
    r = save(client, token, CURATION, memory__llm__timeout_seconds="60")
    assert notice(r) == "Saved. Applied at once: memory.llm.timeout_seconds."
    assert "until it starts again" not in r.get_data(as_text=True)  # nothing waits for a restart any more
    assert engine.settings["memory.llm.model"] is None and engine.settings["memory.llm.timeout_seconds"] == 60


def test_a_cleared_number_field_goes_back_to_its_default(client, engine):
    """A walk cleared memory.recall.timeout_ms and was told "is None; allowed: a whole number…"."""
    csrf = sign_in(client, engine)
    r = client.post("/settings", data={"csrf_token": csrf, "group": "Recall", "memory.recall.timeout_ms": "500"})
    assert r.status_code in (200, 303) and engine.settings["memory.recall.timeout_ms"] == 500
    r = client.post("/settings", data={"csrf_token": csrf, "group": "Recall", "memory.recall.timeout_ms": ""})
    assert r.status_code in (200, 303), r.get_data(as_text=True)
    assert engine.settings["memory.recall.timeout_ms"] == 300
    r = client.post("/settings", data={"csrf_token": csrf, "group": "Recall", "memory.recall.timeout_ms": "true"})
    said = r.get_data(as_text=True)
    assert r.status_code == 422 and "is true; allowed" in said and "True" not in said
