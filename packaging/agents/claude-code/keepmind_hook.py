#!/usr/bin/env python3
"""Claude Code hooks for Keepmind (standard library only; any python3 runs it).

    keepmind_hook.py prompt   UserPromptSubmit: recall for the prompt, print the [memory-recall] block
    keepmind_hook.py stop     Stop: post the finished turn (prompt, reply, tools used, recalled ids),
                              read from the transcript
    keepmind_hook.py end      SessionEnd: end the Keepmind session (it is distilled one last time)

It finds the running Keepmind through server.json and the token file in the data dir
(KEEPMIND_HOME, else the platform's user data dir), with the token in KEEPMIND_TOKEN, else the
local token file; it sends the token only after the server proved it is the one server.json
names (a stale server.json may name a port another program listens on now). The session scope comes from
KEEPMIND_AUDIENCE / KEEPMIND_BOUNDARY, else `mcp.audience` / `mcp.boundary` in keepmind.json,
else personal / default: use the same boundary as the MCP server so both see the same memories.
A hook never blocks the prompt: if Keepmind is not running or fails, it prints nothing, exits 0.
Between hooks it keeps only the Keepmind session id and the recalled ids (never the prompt), in
an owner-only file under <data dir>/hooks/claude-code/.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import urllib.error
import urllib.request
from pathlib import Path

TIMEOUT_S = {"prompt": 3.0, "stop": 5.0, "end": 5.0}


def data_dir() -> Path:
    if os.environ.get("KEEPMIND_HOME"):
        return Path(os.environ["KEEPMIND_HOME"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "keepmind"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "keepmind"
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "keepmind"


def setting(home: Path, name: str, default: str) -> str:
    env = os.environ.get("KEEPMIND_" + name.split(".")[-1].upper())
    if env:
        return env
    try:
        raw = json.loads((home / "keepmind.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default
    if name in raw:
        return raw[name]
    node = raw
    for part in name.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, str) and node else default


class NotKeepmind(OSError):
    """What listens at server.json's url is not the Keepmind that wrote it (a stale file)."""


class Keepmind:
    def __init__(self, home: Path, timeout: float):
        info = json.loads((home / "server.json").read_text(encoding="utf-8"))
        self.base = info["url"].rstrip("/") + "/api/v1"
        self.timeout = timeout
        self.token = None
        self.check_instance(home, info)
        self.token = os.environ.get("KEEPMIND_TOKEN") or (home / "token").read_text(encoding="utf-8").strip()

    def check_instance(self, home: Path, info: dict) -> None:
        """Before the token goes anywhere: the lock file holds server.json's pid, and the server
        answers a fresh challenge with HMAC-SHA256 under server.json's nonce (POST /hello, no
        token). After a crash another program may listen on the port a stale server.json names."""
        nonce = info.get("nonce")
        if not isinstance(nonce, str) or not nonce:
            raise NotKeepmind("server.json has no nonce: restart Keepmind")
        try:
            lock_pid = int((home / "keepmind.lock").read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            lock_pid = None
        if lock_pid is not None and lock_pid != info.get("pid"):
            raise NotKeepmind("server.json is stale (another process holds the data dir's lock)")
        challenge = secrets.token_urlsafe(32)
        answer = self.post("/hello", {"challenge": challenge})
        proof = answer.get("proof") if isinstance(answer, dict) else None
        expected = hmac.new(nonce.encode("utf-8"), challenge.encode("utf-8"), hashlib.sha256).hexdigest()
        if not isinstance(proof, str) or not hmac.compare_digest(proof, expected):
            raise NotKeepmind(f"what answers at {self.base} is not this data dir's Keepmind (stale server.json?)")

    def post(self, path: str, body: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base + path, data=json.dumps(body).encode("utf-8"), method="POST",
                                         headers=headers)
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            return json.loads(response.read().decode("utf-8"))


def state_path(home: Path, claude_session: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", claude_session or "unknown")[:120]
    return home / "hooks" / "claude-code" / f"{safe}.json"


def load_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def save_state(path: Path, state: dict) -> None:
    """Write the state owner-only (0600, in a 0700 folder): it names the Keepmind session."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    for folder in (path.parent, path.parent.parent):
        os.chmod(folder, 0o700)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(state, fh)
    tmp.replace(path)


def session_id(km: Keepmind, home: Path, state: dict, event: dict) -> str:
    if not state.get("session"):
        opened = km.post("/sessions", {
            "audience": setting(home, "mcp.audience", "personal"),
            "boundary": setting(home, "mcp.boundary", "default"),
            "channel": "claude-code", "title": f"Claude Code in {Path(event.get('cwd') or '.').name}"})
        state["session"] = opened["session"]["id"]
    return state["session"]


def text_of(content) -> tuple[str, list[str]]:
    """The text and the tool names of one transcript message's content."""
    if isinstance(content, str):
        return content, []
    texts, tools = [], []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif isinstance(block, dict) and block.get("type") == "tool_use":
            tools.append(str(block.get("name", "")))
    return "\n".join(t for t in texts if t), tools


def last_turn(transcript_path: str | None) -> tuple[str, str, list[str]]:
    """(last real user prompt, the assistant text after it, tool names used) from the JSONL transcript."""
    user, assistant, tools = "", [], []
    try:
        lines = Path(transcript_path).read_text(encoding="utf-8").splitlines() if transcript_path else []
    except OSError:
        lines = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict):
            continue
        text, used = text_of(message.get("content"))
        if entry.get("type") == "user" and text.strip():  # tool results carry no text block
            user, assistant, tools = text, [], []
        elif entry.get("type") == "assistant":
            if text.strip():
                assistant.append(text)
            tools.extend(t for t in used if t and t not in tools)
    return user, "\n\n".join(assistant), tools


def main(argv: list[str]) -> int:
    action = argv[1] if len(argv) > 1 else ""
    if action not in TIMEOUT_S:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        event = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        event = {}
    home = data_dir()
    path = state_path(home, str(event.get("session_id", "")))
    state = load_state(path)
    try:
        km = Keepmind(home, TIMEOUT_S[action])
        if action == "prompt":
            prompt = str(event.get("prompt", ""))  # never kept: the transcript has it at Stop
            sid = session_id(km, home, state, event)
            result = km.post(f"/sessions/{sid}/recall", {"message": prompt})
            state["recalled_ids"] = [i["id"] for i in result.get("items", [])]
            if result.get("block"):
                print(result["block"])
        elif action == "stop":
            user, assistant, tools = last_turn(event.get("transcript_path"))
            if user.strip() or assistant.strip():
                sid = session_id(km, home, state, event)
                km.post(f"/sessions/{sid}/turns", {"user": user, "assistant": assistant, "tools": tools,
                                                   "recalled_ids": state.get("recalled_ids", [])})
            state.pop("recalled_ids", None)
        elif action == "end":
            if state.get("session"):
                km.post(f"/sessions/{state['session']}/end", {})
            path.unlink(missing_ok=True)
            return 0
    except (OSError, ValueError, KeyError, urllib.error.URLError) as exc:
        print(f"keepmind hook ({action}): {exc}", file=sys.stderr)  # shown in Claude Code's debug log only
    if state:
        try:
            save_state(path, state)  # keep the session id even when a later call failed
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
