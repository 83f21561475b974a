#!/usr/bin/env python3
"""Claude Code hooks for Keepmind (standard library only; any python3 runs it).

    keepmind_hook.py prompt      UserPromptSubmit: recall for the prompt, print the [memory-recall] block
    keepmind_hook.py stop        Stop: post the finished turn (prompt, reply, tools used, recalled ids),
                                 read from the transcript
    keepmind_hook.py precompact  PreCompact: post the conversation about to be compacted as the
                                 session's compaction summary (kept as evidence, recalled on request;
                                 recall may inject a memory again once the context forgot it)
    keepmind_hook.py subagent    SubagentStop: post the subagent's final answer as findings
    keepmind_hook.py end         SessionEnd: end the Keepmind session (it is distilled one last time)

It finds the running Keepmind through server.json and the token file in the data dir
(KEEPMIND_HOME, else the platform's user data dir), with the token in KEEPMIND_TOKEN, else the
local token file; it sends the token only after the server proved it is the one server.json
names (a stale server.json may name a port another program listens on now). The session scope comes from
KEEPMIND_AUDIENCE / KEEPMIND_BOUNDARY, else `mcp.audience` / `mcp.boundary` in keepmind.json,
else personal / default: use the same boundary as the MCP server so both see the same memories.
A hook never blocks the prompt: if Keepmind is not running or fails, it prints nothing, exits 0.
Between hooks it keeps only the Keepmind session id and the recalled ids (never the prompt), in
an owner-only file under <data dir>/hooks/claude-code/. Each recall is logged to recalls.jsonl
there (owner-only, the last 200): when, the Claude Code session, the receipt id and how many
memories it injected, or why the hook could not ask (never the prompt), so that
`keepmind recall explain --last` can say why a prompt got nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

TIMEOUT_S = {"prompt": 3.0, "stop": 5.0, "precompact": 8.0, "subagent": 8.0, "end": 5.0}
RECALL_LOG = "recalls.jsonl"
RECALL_LOG_KEEP = 200
SUMMARY_CHARS = 24_000  # what a compaction posts at most (the newest turns win)
FINDING_CHARS = 20_000


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


def why_not(home: Path, exc: Exception) -> str:
    """The reason a recall could not be asked, in words for the log."""
    if isinstance(exc, FileNotFoundError) and Path(exc.filename or "").name == "server.json":
        return f"Keepmind is not running for {home} (start it with `keepmind serve`, or let `keepmind mcp` start it)"
    if isinstance(exc, NotKeepmind):
        return str(exc)
    if isinstance(exc, urllib.error.HTTPError):
        try:
            said = json.loads(exc.read().decode("utf-8")).get("error")
        except (OSError, ValueError, AttributeError):
            said = None
        return f"Keepmind answered {exc.code}: {said or exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"Keepmind did not answer ({exc.reason})"
    return f"{type(exc).__name__}: {exc}"[:300]


def hooks_dir(home: Path) -> Path:
    return home / "hooks" / "claude-code"


def state_path(home: Path, claude_session: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", claude_session or "unknown")[:120]
    return hooks_dir(home) / f"{safe}.json"


def private_dir(folder: Path) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for each in (folder, folder.parent):
        os.chmod(each, 0o700)


def log_recall(home: Path, entry: dict) -> None:
    """Append one recall to the owner-only recall log (ids, counts, errors: never the prompt), keeping
    the last RECALL_LOG_KEEP. Nothing is written when the data dir does not exist."""
    if not home.is_dir():
        return
    folder = hooks_dir(home)
    private_dir(folder)
    path = folder / RECALL_LOG
    line = json.dumps({"at": int(time.time() * 1000), **entry}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(line)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if len(lines) > 2 * RECALL_LOG_KEEP:
        tmp = path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.writelines(lines[-RECALL_LOG_KEEP:])
        tmp.replace(path)


def load_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def save_state(path: Path, state: dict) -> None:
    """Write the state owner-only (0600, in a 0700 folder): it names the Keepmind session."""
    private_dir(path.parent)
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


def entries(transcript_path: str | None):
    """The transcript's user and assistant entries after the last compaction boundary."""
    try:
        lines = Path(transcript_path).read_text(encoding="utf-8").splitlines() if transcript_path else []
    except OSError:
        lines = []
    found = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
            found = []  # what came before was compacted already
        elif (entry.get("type") in ("user", "assistant") and isinstance(entry.get("message"), dict)
              and not entry.get("isCompactSummary") and not entry.get("isMeta")):
            found.append(entry)
    return found


def conversation(transcript_path: str | None) -> list[tuple[str, str]]:
    """(user text, assistant text) per turn since the last compaction; tool results left out."""
    turns: list[list] = []
    for entry in entries(transcript_path):
        text, _ = text_of(entry["message"].get("content"))
        if not text.strip():
            continue
        if entry["type"] == "user":
            turns.append([text.strip(), []])
        elif turns:
            turns[-1][1].append(text.strip())
        else:
            turns.append(["", [text.strip()]])
    return [(user, "\n\n".join(replies)) for user, replies in turns]


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def compaction_summary(event: dict) -> str:
    """What is about to be compacted, as text: the newest turns that fit SUMMARY_CHARS."""
    turns = conversation(event.get("transcript_path"))
    trigger = str(event.get("trigger") or "auto")
    instructions = str(event.get("custom_instructions") or "").strip()
    head = (f"Claude Code conversation in {Path(event.get('cwd') or '.').name}, before a {trigger} compaction"
            + (f" (asked to keep: {clip(instructions, 300)})" if instructions else "") + ".")
    parts: list[str] = []
    size = len(head)
    for user, reply in reversed(turns):
        part = "\n".join(x for x in ((f"User: {clip(user, 1500)}" if user else ""),
                                      (f"Assistant: {clip(reply, 3000)}" if reply else "")) if x)
        if size + len(part) + 2 > SUMMARY_CHARS:
            break
        parts.append(part)
        size += len(part) + 2
    left_out = len(turns) - len(parts)
    if left_out:
        head += f" {left_out} earlier turn(s) left out."
    return "\n\n".join([head, *reversed(parts)]) if parts else ""


def final_reply(event: dict) -> str:
    """The subagent's final answer: `last_assistant_message` (Claude Code 2.1.47+), else the last
    assistant text of its own transcript (`agent_transcript_path`)."""
    text = event.get("last_assistant_message")
    if isinstance(text, str) and text.strip():
        return text.strip()
    for entry in reversed(entries(event.get("agent_transcript_path"))):
        if entry["type"] == "assistant":
            said, _ = text_of(entry["message"].get("content"))
            if said.strip():
                return said.strip()
    return ""


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
    claude_session = str(event.get("session_id", ""))
    try:
        km = Keepmind(home, TIMEOUT_S[action])
        if action == "prompt":
            prompt = str(event.get("prompt", ""))  # never kept: the transcript has it at Stop
            sid = session_id(km, home, state, event)
            result = km.post(f"/sessions/{sid}/recall", {"message": prompt})
            state["recalled_ids"] = [i["id"] for i in result.get("items", [])]
            log_recall(home, {"claude_session": claude_session, "session": sid, "receipt": result.get("receipt"),
                              "injected": len(result.get("items", [])), "degraded": result.get("degraded") or []})
            if result.get("block"):
                print(result["block"])
        elif action == "stop":
            user, assistant, tools = last_turn(event.get("transcript_path"))
            if user.strip() or assistant.strip():
                sid = session_id(km, home, state, event)
                km.post(f"/sessions/{sid}/turns", {"user": user, "assistant": assistant, "tools": tools,
                                                   "recalled_ids": state.get("recalled_ids", [])})
            state.pop("recalled_ids", None)
        elif action == "precompact":
            summary = compaction_summary(event)
            if summary:
                sid = session_id(km, home, state, event)
                km.post(f"/sessions/{sid}/compaction", {"summary": summary})
        elif action == "subagent":
            reply = final_reply(event)
            if reply:
                sid = session_id(km, home, state, event)
                kind = str(event.get("agent_type") or "subagent")
                first = reply.splitlines()[0].strip(" #*")
                km.post(f"/sessions/{sid}/findings", {"findings": [{
                    "title": clip(f"{kind}: {first}", 120), "content": clip(reply, FINDING_CHARS),
                    "tags": ["claude-code", f"agent:{kind}"[:200]]}]})
        elif action == "end":
            if state.get("session"):
                km.post(f"/sessions/{state['session']}/end", {})
            path.unlink(missing_ok=True)
            return 0
    except (OSError, ValueError, KeyError, urllib.error.URLError) as exc:
        print(f"keepmind hook ({action}): {exc}", file=sys.stderr)  # shown in Claude Code's debug log only
        if action == "prompt":
            try:
                log_recall(home, {"claude_session": claude_session, "receipt": None, "error": why_not(home, exc)})
            except OSError:
                pass
    if state:
        try:
            save_state(path, state)  # keep the session id even when a later call failed
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
