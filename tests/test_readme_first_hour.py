"""The README's Quickstart, MCP and Agent integration sections, run as written from a fresh clone
in a clean shell: no virtualenv on the PATH, HOME a temporary folder, the data dir the default one
under it. Every command of their `sh` blocks must succeed and say what the README says it does.

What the test provides, as a new user's machine would: pipx (installed into a helper virtualenv,
only its `pipx` on the PATH), a `claude` that records what it is asked to add (Claude Code is not
installed here), the project folder the Agent section `cd`s into, and two changes a shared test
machine needs: port 8765 may be taken, so keepmind.json names a free port and the commands' 8765
is replaced by it; and models never come from the hub (HF_HUB_OFFLINE). The development block
(`./dev run`, `./dev test`) is not run here: `./dev test` is what runs this test, and `./dev run`'s
message is checked in the checkout itself (its virtualenv exists already).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
pytestmark = pytest.mark.slow


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def sh_blocks(text: str) -> list[list[str]]:
    """The command lines of each ```sh block (comments and blank lines dropped)."""
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    out = []
    for block in blocks:
        lines = [re.sub(r"\s+#\s.*$", "", line).rstrip() for line in block.splitlines()]
        out.append([line for line in lines if line and not line.lstrip().startswith("#")])
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Shell:
    """A clean shell: runs command lines one by one in one bash, keeping its cwd and variables."""

    def __init__(self, env: dict, cwd: Path, port: int):
        self.env, self.port = env, port
        self.state = cwd.parent / "shell-state.sh"
        self.state.write_text(f"cd {cwd}\n")

    def run(self, line: str, timeout: float = 300) -> str:
        line = line.replace("8765", str(self.port))
        script = (f"set -euo pipefail\nsource {self.state}\n{line}\n"
                  f"{{ declare -p TOKEN 2>/dev/null || true; echo \"cd $(pwd)\"; }} > {self.state}.new\n")
        done = subprocess.run(["bash", "-c", script], env=self.env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"`{line}` failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        Path(f"{self.state}.new").replace(self.state)
        return done.stdout + done.stderr


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    """A new user's machine: HOME, pipx, a fake `claude`, a fresh clone at ~/src/keepmind."""
    base = tmp_path_factory.mktemp("first-hour")
    home = base / "home"
    (home / "code" / "myproject").mkdir(parents=True)
    tools = base / "tools"
    tools.mkdir()
    helper = base / "pipx-venv"
    subprocess.run([sys.executable, "-m", "venv", str(helper)], check=True, timeout=120)
    subprocess.run([str(helper / "bin" / "python"), "-m", "pip", "install", "-q", "pipx>=1.4,<2"], check=True,
                   timeout=300, env={k: v for k, v in os.environ.items() if k.startswith("PIP_")} | {
                       "PATH": os.environ["PATH"], "HOME": str(home)})
    (tools / "pipx").symlink_to(helper / "bin" / "pipx")
    calls = base / "claude-calls.jsonl"
    (tools / "claude").write_text(f"#!/bin/sh\n{shutil.which('python3') or sys.executable} -c "
                                  f"'import json,sys; print(json.dumps(sys.argv[1:]))' \"$@\" >> {calls}\n")
    (tools / "claude").chmod(0o755)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(home / "src" / "keepmind")], check=True, timeout=120)
    port = free_port()
    data = home / ".local" / "share" / "keepmind"
    data.mkdir(parents=True, mode=0o700)
    (data / "keepmind.json").write_text(json.dumps({"server.port": port}))
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}  # the machine's package index settings
    env.update(HOME=str(home), LANG="C.UTF-8", HF_HUB_OFFLINE="1", TERM="dumb",
               PATH=f"{home}/.local/bin:{tools}:/usr/local/bin:/usr/bin:/bin")
    shell = Shell(env, home / "src" / "keepmind", port)
    yield {"home": home, "data": data, "port": port, "shell": shell, "env": env, "calls": calls}
    subprocess.run([str(home / ".local" / "bin" / "keepmind"), "stop"], env=env, capture_output=True, timeout=60)


def test_the_quickstart_mcp_and_agent_sections_work_as_written(machine):
    shell, home, data = machine["shell"], machine["home"], machine["data"]
    install, then = sh_blocks(section("Quickstart"))[:2]
    serve = None
    for line in install:
        if line == "keepmind serve":  # it runs until stopped: the README says to leave it running
            serve = subprocess.Popen(["bash", "-c", line], env=machine["env"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, cwd=home / "src" / "keepmind")
            said_first = []  # log lines (warnings) may come first
            while not said_first or ("keepmind serving on" not in said_first[-1] and said_first[-1]):
                said_first.append(serve.stdout.readline())
            started = [x for x in said_first if "keepmind serving on" in x]
            assert started and f"http://127.0.0.1:{machine['port']}" in started[0], "".join(said_first)
            continue
        out = shell.run(line)
        if line == "pipx install .":
            assert (home / ".local" / "bin" / "keepmind").exists(), out
        if line == "keepmind --version":
            assert out.startswith("keepmind "), out
        if line.startswith("keepmind models install-offline"):
            assert "all-minilm-l6-v2" in out, out
    assert serve is not None, "the Quickstart starts `keepmind serve`"
    said = {}
    for line in then:
        said[line] = shell.run(line)
    assert said["keepmind status"].startswith(f"server: running at http://127.0.0.1:{machine['port']}")
    curl = next(v for k, v in said.items() if k.startswith("curl "))
    assert json.loads(curl)["ok"] is True and json.loads(curl)["memory"]["status"] in ("healthy", "degraded")
    added = next(v for k, v in said.items() if k.startswith("keepmind memories add "))
    assert added.startswith("kept as doc-"), added  # curated by the running Keepmind
    assert "I always prefer a window seat when I fly." in said["keepmind memories list"]
    assert said["keepmind stop"].startswith("stopped the Keepmind at")
    assert serve.wait(60) == 0
    with serve.stdout:
        assert "keepmind stopped" in serve.stdout.read()

    # MCP: the entry with absolute paths, and Claude Code's `claude mcp add` as the README writes it
    mcp_lines = [line for block in sh_blocks(section("MCP")) for line in block]
    for line in mcp_lines:
        said[line] = shell.run(line)
    entry = json.loads(said["keepmind mcp --print-config --boundary myproject"])["mcpServers"]["keepmind"]
    assert Path(entry["command"]).is_absolute() and str(home) in entry["command"]
    (added,) = [json.loads(x) for x in machine["calls"].read_text().splitlines()]
    assert added[:4] == ["mcp", "add", "keepmind", "--"] and Path(added[4]).is_absolute()
    bare = {**machine["env"], "PATH": "/usr/bin:/bin"}  # what a desktop MCP client may start it with
    params = StdioServerParameters(command=added[4], args=added[5:], env=bare)

    async def agent():
        async with Client(params, read_timeout_seconds=60) as client:
            stored = await client.call_tool("store_memory", {"title": "Grinder",
                                                              "content": "The user grinds espresso with a Niche Zero."})
            assert not stored.is_error, stored.content
            found = await client.call_tool("find_memories", {"query": "anything at all"})
            assert not found.is_error, found.content

    anyio.run(agent)
    assert json.loads((data / "server.json").read_text())["idle_stop_minutes"] == 30  # started by keepmind mcp

    # Agent integration: the hook copied into the project and run as Claude Code runs it
    for line in [line for block in sh_blocks(section("Agent integration (Claude Code hooks)")) for line in block]:
        shell.run(line)
    project = home / "code" / "myproject"
    settings = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    transcript = project / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "Which grinder?"}}) + "\n"
                          + json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
                              {"type": "text", "text": "The Niche Zero."}]}}) + "\n")
    base = {"session_id": "claude-1", "transcript_path": str(transcript), "cwd": str(project)}
    events = [("UserPromptSubmit", {"prompt": "Which grinder do I use?"}), ("Stop", {"stop_hook_active": False}),
              ("PreCompact", {"trigger": "auto", "custom_instructions": ""}),
              ("SubagentStop", {"stop_hook_active": False, "agent_id": "a1", "agent_type": "Explore",
                                "agent_transcript_path": str(transcript), "last_assistant_message": "Found it."}),
              ("SessionEnd", {"reason": "other"})]
    for name, event in events:
        (hook,) = settings[name][0]["hooks"]
        done = subprocess.run(["bash", "-c", hook["command"]], input=json.dumps({**base, **event, "hook_event_name": name}),
                              env={**machine["env"], "CLAUDE_PROJECT_DIR": str(project)}, cwd=project,
                              capture_output=True, text=True, timeout=hook["timeout"] + 30)
        assert done.returncode == 0 and done.stderr == "", (name, done.stderr)
    assert "Claude Code in myproject" in shell.run("keepmind sessions list")
    assert "injected" in shell.run("keepmind recall explain --last")
    assert shell.run("keepmind stop").startswith("stopped the Keepmind at")


def test_dev_run_says_how_to_reach_the_command_from_any_shell(tmp_path):
    if not (ROOT / ".venv" / "bin" / "keepmind").exists():
        pytest.skip("./dev has not set up this checkout's virtualenv")
    home = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k.startswith("PIP_")}
    env.update(HOME=str(tmp_path), KEEPMIND_HOME=str(home), HF_HUB_OFFLINE="1", PATH="/usr/bin:/bin",
               KEEPMIND_TEST_MODELS=os.environ.get("KEEPMIND_TEST_MODELS", ""))
    models = Path(os.environ.get("KEEPMIND_TEST_MODELS") or ROOT / ".cache" / "test-models") / "models"
    (home / "models").mkdir(parents=True)
    for model in models.iterdir():  # already installed: install-offline only checks it
        shutil.copytree(model, home / "models" / model.name)
    (home / "keepmind.json").write_text(json.dumps({"server.port": 0}))
    run = subprocess.Popen([str(ROOT / "dev"), "run"], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    try:
        for line in run.stdout:
            lines.append(line)
            if "serving on" in line:
                break
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        run.wait(60)
        run.stdout.close()
    said = "".join(lines)
    bin_dir = ROOT / ".venv" / "bin"
    assert f"The keepmind command is {bin_dir}/keepmind" in said
    assert f'export PATH="{bin_dir}:$PATH"' in said and f"pipx install {ROOT}" in said
    entry = json.loads(said[said.index("{"):said.rindex("}") + 1])["mcpServers"]["keepmind"]
    assert entry["command"] == str((bin_dir / "keepmind").resolve()) or entry["command"] == str(bin_dir / "keepmind")
