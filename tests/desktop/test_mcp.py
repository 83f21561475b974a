"""`keepmind mcp`: listed and every tool called by the MCP client library, in-process and over stdio."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import anyio
import psutil
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from keepmind import version
from keepmind.desktop.cli import main as cli
from keepmind.desktop.mcp.server import McpSession, build_server
from keepmind.desktop.process.client import DaemonClient
from keepmind.desktop.process.files import read_server_json

TOOLS = ["find_memories", "get_memories", "recall", "store_memory", "update_memory"]


async def exercise_every_tool(client: Client, engine_has_recall: bool) -> dict:
    """List the tools and call each one; returns what the calls gave back."""
    listed = await client.list_tools()
    assert sorted(t.name for t in listed.tools) == TOOLS
    for tool in listed.tools:
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        assert tool.description
    # find_memories is topped up by meaning: its schema said "a lexical search, not by meaning" (a walk)
    [find] = [t for t in listed.tools if t.name == "find_memories"]
    query = find.input_schema["properties"]["query"]["description"]
    assert "meaning" in query and "not by meaning" not in query
    out = {}
    found = await client.call_tool("find_memories", {"query": "espresso grinder"})
    assert not found.is_error, found.content
    out["found"] = found.structured_content
    mid = found.structured_content["items"][0]["id"]
    got = await client.call_tool("get_memories", {"ids": [mid, "doc-" + "0" * 32]})
    assert not got.is_error
    out["got"] = got.structured_content
    updated = await client.call_tool("update_memory", {"id": mid, "old_text": "Baratza", "new_text": "Niche"})
    assert not updated.is_error, updated.content
    out["updated"] = updated.structured_content
    retitled = await client.call_tool("update_memory", {"id": mid, "title": "Espresso gear"})
    assert not retitled.is_error, retitled.content
    out["retitled"] = retitled.structured_content
    stored = await client.call_tool("store_memory", {"title": "Tea", "content": "The user drinks green tea after 4pm."})
    out["stored"] = stored
    recalled = await client.call_tool("recall", {"message": "which grinder do I use?"})
    out["recalled"] = recalled
    bad = await client.call_tool("update_memory", {"id": "not-an-id", "delete": True})
    assert bad.is_error and "not a memory id" in bad.content[0].text
    return out


def check_results(out: dict, engine_has_store: bool, engine_has_recall: bool) -> None:
    assert out["found"]["count"] == 1
    item = out["found"]["items"][0]
    assert item["class"] == "durable_fact" and "Baratza" in item["content"]  # named as the REST API names it
    assert out["got"]["items"][0]["id"] == item["id"]
    assert out["got"]["missing"][0]["id"] == "doc-" + "0" * 32
    assert out["updated"] == {"id": item["id"], "action": "replaced", "new_id": None, "replacements": 1,
                              "revision": 2,
                              "reason": "replaced 1 occurrence: revision 2 (the earlier text stays in its history)"}
    assert out["retitled"]["action"] == "retitled" and out["retitled"]["revision"] == 3
    if engine_has_store:
        assert not out["stored"].is_error, out["stored"].content
        assert out["stored"].structured_content["action"] == "queued"
        assert out["stored"].structured_content["checkpoint_id"]
    else:
        assert out["stored"].is_error and "not available" in out["stored"].content[0].text
    if engine_has_recall:
        assert not out["recalled"].is_error, out["recalled"].content
        assert set(out["recalled"].structured_content) >= {"block", "items", "receipt", "degraded", "took_ms"}
    else:
        assert out["recalled"].is_error and "not available" in out["recalled"].content[0].text


def test_mcp_tools_in_process(live):
    sid = live.engine.open_session("personal", "work")
    live.engine.store(sid, "Coffee", "The user grinds espresso with a Baratza grinder.")
    session = McpSession(lambda start=True: DaemonClient(live.url, live.token), "personal", "work")
    server = build_server(session)

    async def main():
        async with Client(server) as client:
            return await exercise_every_tool(client, hasattr(live.engine, "recall"))

    out = anyio.run(main)
    check_results(out, hasattr(live.engine, "store_memory"), hasattr(live.engine, "recall"))
    session.close()
    with live.engine.db.snapshot() as conn:
        rows = conn.execute("SELECT audience, boundary, channel, status FROM sessions WHERE channel='mcp'").fetchall()
    assert rows == [("personal", "work", "mcp", "ended")]


def test_mcp_session_obeys_the_token_ceiling(live):
    team_token = live.make_token("team-mcp", "team")
    session = McpSession(lambda start=True: DaemonClient(live.url, team_token), "personal", "work")

    async def main():
        async with Client(build_server(session)) as client:
            return await client.call_tool("find_memories", {"query": "anything"})

    result = anyio.run(main)
    session.close()
    assert result.is_error and "ceiling is team" in result.content[0].text


def test_keepmind_mcp_over_stdio_starts_the_server_and_serves_every_tool(tmp_path, start_live):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({
        "server.port": 0, "memory.embeddings.auto_download": False, "memory.embeddings.enabled": False,
        "mcp": {"audience": "personal", "boundary": "work"}}))
    # a memory in the store before the daemon starts
    seed = start_live(home)
    try:
        sid = seed.engine.open_session("personal", "work")
        seed.engine.store(sid, "Coffee", "The user grinds espresso with a Baratza grinder.")
        has_store, has_recall = hasattr(seed.engine, "store_memory"), hasattr(seed.engine, "recall")
    finally:
        seed.stop()
    assert read_server_json(home) is None
    params = StdioServerParameters(command=sys.executable, args=["-m", "keepmind", "mcp", "--home", str(home)],
                                   env={**os.environ, "HF_HUB_OFFLINE": "1"})

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            return await exercise_every_tool(client, has_recall)

    pid = None
    try:
        out = anyio.run(main)
        info = read_server_json(home)
        assert info is not None, "keepmind mcp did not start the server"
        pid = info["pid"]
        check_results(out, has_store, has_recall)
    finally:
        info = read_server_json(home)
        if info is not None:
            pid = info["pid"]
        if pid is not None and psutil.pid_exists(pid):
            os.kill(pid, signal.SIGTERM)
            psutil.Process(pid).wait(60)
    assert read_server_json(home) is None
    after = start_live(home)
    try:
        with after.engine.db.snapshot() as conn:
            rows = conn.execute("SELECT audience, boundary, status FROM sessions WHERE channel='mcp'").fetchall()
    finally:
        after.stop()
    assert rows == [("personal", "work", "ended")]  # scope from keepmind.json; ended when the client left


def test_connect_uses_a_given_token_and_reports_a_refused_one(live):
    from keepmind.desktop.process.client import ApiError, connect

    home = live.daemon.home
    team = live.make_token("team-agent", "team")
    client = connect(home, start=False, token=team)
    try:
        assert client.get("/status")["token"]["name"] == "team-agent"
    finally:
        client.close()
    with pytest.raises(ApiError, match="refused the API token") as refused:
        connect(home, start=False, token="km_wrong")
    assert refused.value.status == 401


def call_each(live, calls: list[tuple[str, dict]]):
    """Call the tools in-process; returns the results and the server's initialize answer."""
    session = McpSession(lambda start=True: DaemonClient(live.url, live.token), "personal", "work")

    async def main():
        async with Client(build_server(session)) as client:
            return [await client.call_tool(name, args) for name, args in calls], client.server_info

    try:
        return anyio.run(main)
    finally:
        session.close()


def test_tool_arguments_are_refused_in_the_apis_words(live):
    (unknown, wrong_type, coerced, missing, not_a_list, item, ok), _ = call_each(live, [
        ("find_memories", {"query": "x", "bogus": 1}),
        ("find_memories", {"query": "x", "limit": "five"}),
        ("find_memories", {"query": "x", "limit": "5"}),  # pydantic would take it; the API does not
        ("find_memories", {}),
        ("get_memories", {"ids": "doc-" + "0" * 32}),
        ("get_memories", {"ids": ["doc-" + "0" * 32, 7]}),
        ("find_memories", {"query": "x", "limit": 5.0}),  # a whole number, as JSON Schema counts them
    ])
    said = [r.content[0].text for r in (unknown, wrong_type, coerced, missing, not_a_list, item)]
    assert said == ["unknown field 'bogus'; allowed: query, limit, include_expired",
                    "limit must be a whole number", "limit must be a whole number", "'query' is required",
                    "ids must be a list", "ids[1] must be a string"]
    assert all(r.is_error for r in (unknown, wrong_type, coerced, missing, not_a_list, item))
    assert not ok.is_error, ok.content
    with live.client() as api:  # the API's own words for the same mistakes
        sid = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["session"]["id"]
        refused = api.post(f"/sessions/{sid}/tools/find_memories", json={"query": "x", "limit": "five"}).json()
    assert refused["error"] == "limit must be a whole number"


def test_server_info_names_keepminds_version(live):
    _, info = call_each(live, [])
    with live.client() as api:
        status = api.get("/status").json()
    assert info.name == "keepmind" and info.version == version() == status["version"] and info.version


@pytest.mark.parametrize("boundary", ["*", "a\x01b", " "])
def test_a_boundary_the_engine_refuses_is_refused_before_mcp_starts(boundary, tmp_path, capsys):
    assert cli(["mcp", "--print-config", "--boundary", boundary]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1
    home = tmp_path / "home"  # the server itself: refused before it reads stdin or makes the data dir
    done = subprocess.run([sys.executable, "-m", "keepmind", "mcp", "--home", str(home), "--no-start",
                           "--boundary", boundary], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", err)
    assert not home.exists()


@pytest.mark.offline_model
def test_a_client_of_a_server_it_started_waits_while_the_models_load(offline_models_home, start_live, monkeypatch):
    """The first recall after an autostart is by meaning: connect() waits for the loading models."""
    import threading
    import time

    from keepmind.desktop.process.client import _await_models
    from keepmind.engine.models.service import ModelRuntime

    release = threading.Event()
    load = ModelRuntime.load

    def held(self, *args, **kwargs):
        release.wait(30)  # the disk is slow today
        return load(self, *args, **kwargs)

    monkeypatch.setattr(ModelRuntime, "load", held)
    live = start_live(offline_models_home, start_workers=True, memory__embeddings__enabled=True)
    client = DaemonClient(live.url, live.token)
    try:
        done = threading.Event()
        waiter = threading.Thread(target=lambda: (_await_models(client, time.monotonic() + 30), done.set()))
        waiter.start()
        assert not done.wait(1.0)  # still loading: it waits
        assert any("still loading" in r for r in client.get("/status")["memory"]["reasons"])
        release.set()
        assert done.wait(20)
        assert not any("still loading" in r for r in client.get("/status")["memory"]["reasons"])
        waiter.join()
    finally:
        release.set()
        client.close()
        live.stop()


# -- the tools' input schemas: the JSON API's bounds, a description per argument, one form of refusal -----

API_BODIES = {"find_memories": "FindMemories", "get_memories": "GetMemories", "store_memory": "StoreMemory",
              "update_memory": "UpdateMemory", "recall": "Recall"}


def listed_schemas() -> dict:
    """Each tool's input schema, as an MCP client lists it (listing calls no Keepmind)."""
    session = McpSession(None, "personal", "work")

    async def main():
        async with Client(build_server(session)) as client:
            return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    return anyio.run(main)


def test_tool_schemas_carry_the_json_apis_bounds_and_describe_every_argument():
    from keepmind.webui.schemas import REQUESTS

    listed = listed_schemas()
    find = listed["find_memories"]["properties"]
    assert (find["limit"]["minimum"], find["limit"]["maximum"], find["limit"]["default"]) == (1, 100, 5)
    assert (find["query"]["minLength"], find["query"]["maxLength"]) == (1, 2000)
    assert listed["store_memory"]["properties"]["content"]["minLength"] == 1
    ids = listed["get_memories"]["properties"]["ids"]
    assert (ids["type"], ids["minItems"], ids["maxItems"], ids["items"]["maxLength"]) == ("array", 1, 100, 200)
    assert "comma-separated string" in ids["description"]  # the API takes one too: this tool says it does not
    assert sorted(listed) == sorted(API_BODIES)
    for tool, schema in listed.items():
        api = REQUESTS[API_BODIES[tool]]
        assert schema["additionalProperties"] is False and set(schema["required"]) == set(api["required"]), tool
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool, name)
            want = api["properties"][name]
            if "anyOf" in want:  # ids: a list here (the tool's type), a list or a string in the API
                want = next(o for o in want["anyOf"] if o["type"] == prop["type"])
            got = next(o for o in prop.get("anyOf", [prop]) if o.get("type") != "null")
            bounds = {k: v for k, v in want.items() if k not in ("type", "description")}
            assert {k: got.get(k) for k in bounds} == bounds, (tool, name)


def test_a_call_its_schema_allows_is_taken_and_one_it_refuses_is_refused_in_the_apis_words(live):
    import jsonschema

    from keepmind.webui.schemas import REQUESTS

    listed = listed_schemas()
    longest_title = REQUESTS["StoreMemory"]["properties"]["title"]["maxLength"]
    calls = [
        ("find_memories", {"query": "x", "limit": 0}), ("find_memories", {"query": "x", "limit": 101}),
        ("find_memories", {"query": "x", "limit": 1}), ("find_memories", {"query": "x", "limit": 100}),
        ("find_memories", {"query": ""}), ("find_memories", {"query": "x" * 2001}),
        ("find_memories", {"query": "x" * 2000}),
        ("store_memory", {"content": ""}), ("store_memory", {"content": "The user drinks green tea after 4pm."}),
        ("store_memory", {"content": "Tea.", "title": "t" * (longest_title + 1)}),
        ("get_memories", {"ids": []}), ("get_memories", {"ids": ["doc-" + "0" * 32]}),
        ("get_memories", {"ids": ["x" * 201]}),
        ("update_memory", {"id": "not-an-id", "delete": True}),
        ("recall", {"message": "which tea do I drink?", "context": None}),
    ]
    results, _ = call_each(live, calls)
    for (tool, args), result in zip(calls, results):
        allowed = jsonschema.Draft202012Validator(listed[tool]).is_valid(args)
        assert allowed is not result.is_error, (tool, args, result.content)
    said = [r.content[0].text for r in results if r.is_error]
    assert said[:3] == ["limit must be at least 1", "limit must be at most 100", "query is empty"]
    assert "Error executing tool" not in " ".join(said)
    with live.client() as api:  # the API's words for the same bodies
        sid = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["session"]["id"]
        api_said = [api.post(f"/sessions/{sid}/tools/find_memories", json={"query": "x", "limit": n}).json()["error"]
                    for n in (0, 101)]
    assert said[:2] == api_said


def test_a_refusal_only_the_server_can_make_reads_like_one_the_argument_check_makes(live):
    gone = "doc-" + "1" * 32
    bodies = [{"id": gone, "delete": True}, {"id": gone}]  # no such memory; nothing to update
    results, _ = call_each(live, [("update_memory", b) for b in bodies])
    with live.client() as api:
        sid = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["session"]["id"]
        api_said = [api.post(f"/sessions/{sid}/tools/update_memory", json=b).json()["error"] for b in bodies]
    assert all(r.is_error for r in results)
    assert [r.content[0].text for r in results] == api_said  # without "Error executing tool update_memory: "
    team = live.make_token("team-mcp-2", "team")
    session = McpSession(lambda start=True: DaemonClient(live.url, team), "personal", "work")

    async def main():
        async with Client(build_server(session)) as client:
            return await client.call_tool("find_memories", {"query": "anything"})

    ceiling = anyio.run(main)
    session.close()
    with live.client(team) as api:
        refused = api.post("/sessions", json={"audience": "personal", "boundary": "work"}).json()["error"]
    assert ceiling.is_error and ceiling.content[0].text == refused and "ceiling is team" in refused


# -- `keepmind mcp` and a data dir that is not there -------------------------------------------------------

def test_mcp_refuses_a_data_dir_that_does_not_exist_for_the_config_and_for_the_server(tmp_path, capsys):
    from keepmind.desktop.paths import default_home

    missing = tmp_path / "typo"
    assert cli(["mcp", "--print-config", "--home", str(missing)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (f"error: there is no Keepmind data dir at {missing}: check --home and "
                                 f"KEEPMIND_HOME (the default is {default_home()}); `keepmind serve` creates a "
                                 "new one\n")
    assert cli(["status", "--home", str(missing)]) == 2  # as a command that only reads refuses it
    assert capsys.readouterr().err == err
    # the server (as a client's configuration starts it): refused before it makes the dir or reads stdin
    done = subprocess.run([sys.executable, "-m", "keepmind", "mcp", "--home", str(missing)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", err)
    assert not missing.exists()
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a data dir")
    assert cli(["mcp", "--print-config", "--home", str(a_file)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"error: {a_file} is a file, not a data dir") and err.count("\n") == 1
    home = tmp_path / "home"
    home.mkdir()  # there (as `keepmind serve` leaves it): the entry is printed
    assert cli(["mcp", "--print-config", "--home", str(home)]) == 0
    assert str(home) in json.loads(capsys.readouterr().out)["mcpServers"]["keepmind"]["args"]


def test_every_line_a_client_sends_over_stdio_gets_an_answer_it_can_match(tmp_path):
    """The SDK's transport dropped what it could not validate: a `tools/call` holding a lone
    surrogate, a line that is not JSON and a batch waited for an answer that never came."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"server.port": 0, "memory.embeddings.enabled": False}))
    process = subprocess.Popen([sys.executable, "-m", "keepmind", "mcp", "--home", str(home), "--no-start"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "HF_HUB_OFFLINE": "1"})

    def ask(line: str) -> dict:
        process.stdin.write((line + "\n").encode())
        process.stdin.flush()
        return json.loads(process.stdout.readline())

    try:
        hello = ask(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}))
        assert hello["result"]["serverInfo"]["name"] == "keepmind"
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        call = ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"find_memories",'
                '"arguments":{"query":"\\ud800"}}}')
        answer = ask(call)
        assert answer["id"] == 7 and answer["error"]["code"] == -32602 and "lone surrogate" in answer["error"]["message"]
        answer = ask("this is not json")
        assert answer["id"] is None and answer["error"]["code"] == -32700
        answer = ask('[{"jsonrpc":"2.0","id":8,"method":"tools/list"}]')
        assert answer["id"] is None and answer["error"]["code"] == -32600 and "batches" in answer["error"]["message"]
        answer = ask('{"jsonrpc":"2.0","id":"x","result":1,"method":3}')
        assert answer["id"] == "x" and answer["error"]["code"] == -32600
        # a broken notification gets no answer, and the server reads on: the next request is answered
        process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/x","params":"\\ud800"}\n')
        answer = ask('{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
        assert answer["id"] == 9 and sorted(t["name"] for t in answer["result"]["tools"]) == TOOLS
        process.stdin.close()
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        for stream in (process.stdin, process.stdout, process.stderr):
            stream.close()
