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

It uses the Keepmind of the keepmind MCP server Claude Code starts for the project (setup_for:
its entry in ~/.claude.json, local or user scope, or in the project's .mcp.json): that entry's
--home and --audience / --boundary, else KEEPMIND_HOME in its env and `mcp.audience` / `mcp.boundary`
in keepmind.json, as `keepmind mcp` takes them, so the hooks and the MCP server act in one scope
named in one place. With no such entry: KEEPMIND_HOME (else the platform's user data dir) and
KEEPMIND_AUDIENCE / KEEPMIND_BOUNDARY, else mcp.*, else personal / default. The token is
KEEPMIND_TOKEN (the entry's env first), else the local token file; it is sent only after the server
proved it is the one server.json names (a stale server.json may name a port another program
listens on now). When no Keepmind runs, a hook other than SessionEnd starts one in the background
with the entry's command, as `keepmind mcp` does (`serve --home ... --stop-after-idle`, logging to
<data dir>/logs/serve.log), and waits a few seconds for it: a turn that ends before the MCP server's
own start, or after its Keepmind stopped when idle, is not lost. It starts nothing without an entry,
with --no-start in it, for a data dir that does not exist, or a command inside the project.
A hook never blocks the prompt: if Keepmind cannot be reached or fails, it prints nothing on stdout,
says why in one line on stderr (Claude Code's debug log) and exits 0; malformed input (not a JSON
object, no session_id) is ignored, exit 0; a wrong action is said on stderr, exit 0.
Between hooks it keeps only the Keepmind session (its id, audience and boundary) and the recalled ids
(never the prompt), in an owner-only file under <data dir>/hooks/claude-code/. A session the server
no longer takes (gone, beyond a changed token, ended) is replaced by a new one, once per hook; so is
one whose audience or boundary is no longer the one configured (that one is ended first). Each
recall is logged to recalls.jsonl there (owner-only, the last 200): when, the Claude Code session,
the receipt id and how many memories it injected, or why the hook could not ask (never the
prompt), so that `keepmind recall explain --last` can say why a prompt got nothing.

What it sends fits the API's limits (copied below, with where they come from): a turn's prompt or
reply longer than the server takes is cut, with a note of how long it was, a prompt to the length
recall reads, and every body to the server's body cap in bytes (a non-ASCII character takes 2 to 4).
Hooks of one Claude Code session started at once (a prompt and subagents finishing together) take
the session's lock file in turn to read, open and save its Keepmind session, so they share one.
SessionEnd forgets the session even when Keepmind is not running; the Keepmind session left open is
then passivated by the server once idle (session.idle_timeout_minutes, 30 by default). State files
no hook wrote for STATE_KEEP_DAYS (sessions killed without a SessionEnd) go, with their lock files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt

TIMEOUT_S = {"prompt": 3.0, "stop": 5.0, "precompact": 8.0, "subagent": 8.0, "end": 5.0}
# How long a hook that found no Keepmind waits for the one it starts (settings.json's timeouts leave
# room for it). SessionEnd starts none: the server passivates a session left open once it is idle.
START_WAIT_S = {"prompt": 6.0, "stop": 10.0, "precompact": 10.0, "subagent": 10.0, "end": 0.0}
SERVER_IDLE_MINUTES = 30  # engine/settings.py mcp.server_idle_minutes, the default
SERVE_LOG_MAX_BYTES = 5 * 1024 * 1024  # desktop/process/logs.py MAX_BYTES
RECALL_LOG = "recalls.jsonl"
RECALL_LOG_KEEP = 200
SUMMARY_CHARS = 24_000  # what a compaction posts at most (the newest turns win)
FINDING_CHARS = 20_000
STATE_KEEP_DAYS = 7  # a state file unwritten this long belongs to a session long gone

# The API's limits, copied as the hook runs without Keepmind's code; keep them in step with:
MAX_TURN_CHARS = 200_000  # engine/sessions.py MAX_TURN_CHARS: a turn's user and assistant text (webui/schemas.py)
RECALL_CHARS = 20_000  # engine/recall/__init__.py MAX_MESSAGE_CHARS: recall reads no further into a prompt
MAX_BODY_CHARS = 100_000  # engine/memory.py MAX_BODY_CHARS: a compaction summary, a finding's content
MAX_TITLE_CHARS = 300  # engine/memory.py MAX_TITLE_CHARS: a finding's title
MAX_ITEMS, MAX_ITEM_CHARS = 200, 500  # webui/schemas.py STRINGS: a turn's tools and recalled ids
MAX_BODY_BYTES = 1_048_576  # engine/settings.py server.max_body_bytes, the default (keepmind.json may set it)
assert SUMMARY_CHARS <= MAX_BODY_CHARS and FINDING_CHARS <= MAX_BODY_CHARS


def data_dir(environ) -> Path:
    if environ.get("KEEPMIND_HOME"):
        return Path(environ["KEEPMIND_HOME"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "keepmind"
    if sys.platform == "win32":
        return Path(environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "keepmind"
    return Path(environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "keepmind"


def configured(home: Path, name: str):
    """keepmind.json's value of a dotted key (flat or nested), else None."""
    try:
        raw = json.loads((home / "keepmind.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(raw, dict) and name in raw:
        return raw[name]
    node = raw
    for part in name.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def configured_name(home: Path, name: str, default: str) -> str:
    value = configured(home, name)
    return value if isinstance(value, str) and value else default


def setting(home: Path, name: str, default: str) -> str:
    env = os.environ.get("KEEPMIND_" + name.split(".")[-1].upper())
    return env or configured_name(home, name, default)


# -- the Keepmind of this project's agent: the one its keepmind MCP server uses --------------------


@dataclasses.dataclass(frozen=True)
class Setup:
    """Where the hooks find Keepmind, in which scope they act, and how they start it if none runs."""
    home: Path
    scope: dict  # {"audience": ..., "boundary": ...}
    token: str | None  # None: the data dir's token file
    environ: dict  # the environment the MCP server gets: Claude Code's, with its entry's env
    serve: list | None  # the command before `mcp` in the MCP server's entry; None: start nothing
    no_start: str = ""  # why not, when serve is None


def expand(text: str, environ) -> str:
    """${VAR} and ${VAR:-default} expanded as Claude Code expands them in an MCP server's entry (an
    unset ${VAR} stays as written)."""
    def one(m):
        value = environ.get(m[1])
        return (value if value is not None else m[0]) if m[2] is None else (value or m[2])
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}", one, text)


def read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def mcp_argv(entry) -> list[str]:
    """[command, *args] of a stdio MCP server entry ([] if it is not one)."""
    if not isinstance(entry, dict) or entry.get("type", "stdio") != "stdio":
        return []
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return []
    return [command, *args]


def runs_keepmind_mcp(argv: list[str]) -> bool:
    """`.../keepmind [...] mcp ...` or `python -m keepmind mcp ...`, as `--print-config` writes it."""
    return "mcp" in argv and any(re.split(r"[\\/]", word)[-1].lower() in ("keepmind", "keepmind.exe")
                                 for word in argv[:argv.index("mcp")])


def keepmind_entry(servers) -> dict | None:
    """An mcpServers object's `keepmind` entry, else the first entry that runs `keepmind mcp`."""
    if not isinstance(servers, dict):
        return None
    for entry in [servers.get("keepmind"), *servers.values()]:
        if runs_keepmind_mcp(mcp_argv(entry)):
            return entry
    return None


def mcp_entry(project: Path | None) -> tuple[dict | None, bool]:
    """The keepmind MCP server Claude Code starts in `project`, from its scopes in the order Claude
    Code takes them: local (`claude mcp add`'s default: ~/.claude.json under the project's path), project
    (the project's .mcp.json), user (~/.claude.json's own mcpServers); ~ is CLAUDE_CONFIG_DIR if set.
    Also whether it came from the project's .mcp.json (which the project, not the user, wrote)."""
    config = read_json(Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home()) / ".claude.json")
    projects = config.get("projects") if isinstance(config.get("projects"), dict) else {}
    scopes = []
    if project is not None:
        for key in dict.fromkeys((str(project), str(project.resolve()))):
            local = projects.get(key)
            scopes.append((local.get("mcpServers") if isinstance(local, dict) else None, False))
        scopes.append((read_json(project / ".mcp.json").get("mcpServers"), True))
    scopes.append((config.get("mcpServers"), False))
    return next(((e, shipped) for e, shipped in ((keepmind_entry(s), shipped) for s, shipped in scopes)
                 if e is not None), (None, False))


def option(args: list[str], flag: str) -> str | None:
    """The value `args` give `flag` (`--flag V` or `--flag=V`; the last one wins, as with argparse)."""
    value = None
    for i, word in enumerate(args):
        if word == flag and i + 1 < len(args):
            value = args[i + 1]
        elif word.startswith(flag + "="):
            value = word[len(flag) + 1:]
    return value


def inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def setup_for(event) -> Setup:
    """The data dir and scope of the keepmind MCP server Claude Code starts for this project (its
    --home, --audience and --boundary, else KEEPMIND_HOME in its env and the mcp.* settings: as
    `keepmind mcp` takes them), so that both halves of the agent act in one scope, named once.
    Without such a server: KEEPMIND_HOME, KEEPMIND_AUDIENCE / KEEPMIND_BOUNDARY, else mcp.*."""
    folder = os.environ.get("CLAUDE_PROJECT_DIR") or (text_field(event, "cwd") if isinstance(event, dict) else "")
    project = Path(folder) if folder else None
    entry, shipped = mcp_entry(project)
    if entry is None:
        home = data_dir(os.environ)
        return Setup(home, {"audience": setting(home, "mcp.audience", "personal"),
                            "boundary": setting(home, "mcp.boundary", "default")},
                     os.environ.get("KEEPMIND_TOKEN") or None, dict(os.environ), None,
                     "start it with `keepmind serve`; with the keepmind MCP server configured for this project "
                     "(see the README), the hooks start it when it is not running")
    argv = [expand(word, os.environ) for word in mcp_argv(entry)]
    at = argv.index("mcp")
    if shipped:
        # The repository wrote this entry: it may name the project's boundary (what the README's
        # .mcp.json is for), never the data dir, the audience or the env. A cloned repo's `--home
        # .km` held a server.json naming its own server, and the hooks sent it the user's token and
        # every prompt; its `--audience team` would put the user's turns in the team's memory.
        home = data_dir(os.environ)
        scope = {"audience": setting(home, "mcp.audience", "personal"),
                 "boundary": option(argv[at + 1:], "--boundary") or setting(home, "mcp.boundary", "default")}
        return Setup(home, scope, os.environ.get("KEEPMIND_TOKEN") or None, dict(os.environ), None,
                     "the keepmind MCP server is the project's (.mcp.json), whose command the hooks never run: "
                     "start Keepmind with `keepmind serve`, or add the server with `claude mcp add`")
    extra = entry.get("env") if isinstance(entry.get("env"), dict) else {}
    environ = {**os.environ, **{k: expand(v, os.environ) for k, v in extra.items() if isinstance(v, str)}}
    given = option(argv[1:], "--home")
    home = Path(given).expanduser() if given else data_dir(environ)
    scope = {"audience": option(argv[at + 1:], "--audience") or configured_name(home, "mcp.audience", "personal"),
             "boundary": option(argv[at + 1:], "--boundary") or configured_name(home, "mcp.boundary", "default")}
    token = environ.get("KEEPMIND_TOKEN") or None
    if "--no-start" in argv[at + 1:]:
        return Setup(home, scope, token, environ, None,
                     "the keepmind MCP server is configured with --no-start: start it with `keepmind serve`")
    command = shutil.which(argv[0], path=environ.get("PATH"))
    if command is None:
        return Setup(home, scope, token, environ, None, f"{argv[0]}, the keepmind MCP server's command, was not "
                     "found: start it with `keepmind serve`")
    if project is not None and inside(Path(command), project):  # a project must not choose what runs
        return Setup(home, scope, token, environ, None, f"{argv[0]}, the keepmind MCP server's command, is in "
                     "the project: the hooks do not run it; start Keepmind with `keepmind serve`")
    return Setup(home, scope, token, environ, [command, *argv[1:at]])


def body_cap(home: Path) -> int:
    """The largest body the server takes, in bytes: server.max_body_bytes (a larger one is a 413)."""
    value = configured(home, "server.max_body_bytes")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1024 else MAX_BODY_BYTES


def encode(body) -> bytes:
    """A request body as sent: JSON in UTF-8 (a lone surrogate, which UTF-8 cannot carry, as '?')."""
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "replace")


LOOPBACK = re.compile(r"http://(?:127\.0\.0\.1|localhost|\[::1\]):\d{1,5}/?$")


class NotKeepmind(OSError):
    """What listens at server.json's url is not the Keepmind that wrote it (a stale file)."""


class NotStarted(OSError):
    """No Keepmind runs, and the hook did not start one or the one it started did not come up."""


class Keepmind:
    def __init__(self, setup: Setup, timeout: float):
        home = setup.home
        info = json.loads((home / "server.json").read_text(encoding="utf-8"))
        url = info.get("url") if isinstance(info, dict) else None
        if not isinstance(url, str) or not LOOPBACK.match(url):  # Keepmind listens on loopback only
            raise NotKeepmind("server.json names no loopback address: the token goes nowhere else")
        self.base = url.rstrip("/") + "/api/v1"
        self.timeout = timeout
        self.scope = setup.scope
        self.token = None
        self.check_instance(home, info)
        self.token = setup.token or (home / "token").read_text(encoding="utf-8").strip()

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
        request = urllib.request.Request(self.base + path, data=encode(body), method="POST", headers=headers)
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            return json.loads(response.read().decode("utf-8"))


def said(exc: urllib.error.HTTPError) -> str:
    """The error the server's answer names ("" if none); read once, as the body is a stream."""
    if not hasattr(exc, "keepmind_said"):
        try:
            text = json.loads(exc.read().decode("utf-8")).get("error")
        except (OSError, ValueError, AttributeError):
            text = None
        exc.keepmind_said = text if isinstance(text, str) else ""
    return exc.keepmind_said


def stale_session(exc: Exception) -> bool:
    """The server no longer takes the session: gone or beyond the token now (404 "no session"),
    or ended ("has ended"). A 404 for another reason (a route an older server lacks) is not it."""
    if not isinstance(exc, urllib.error.HTTPError):
        return False
    return (exc.code == 404 and "no session" in said(exc)) or (exc.code in (400, 409) and "has ended" in said(exc))


def why_not(home: Path, exc: Exception) -> str:
    """Why a hook could not do its work, in words for the recall log and stderr: the server's own
    message for an HTTP error (not urllib's "HTTP Error 400: BAD REQUEST")."""
    if isinstance(exc, FileNotFoundError) and Path(exc.filename or "").name == "server.json":
        return f"Keepmind is not running for {home} (start it with `keepmind serve`, or let `keepmind mcp` start it)"
    if isinstance(exc, (NotKeepmind, NotStarted)):
        return str(exc)
    if isinstance(exc, urllib.error.HTTPError):
        return f"Keepmind answered {exc.code}: {said(exc) or exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"Keepmind did not answer ({exc.reason})"
    return f"{type(exc).__name__}: {exc}"[:300]


def hooks_dir(home: Path) -> Path:
    return home / "hooks" / "claude-code"


# -- starting Keepmind when none runs, as `keepmind mcp` does ---------------------------------------


def not_running(exc: Exception) -> bool:
    """Does `exc` say no Keepmind serves the data dir (no server.json, a stale one, nothing listening
    there)? An answer, even a refusal, or a slow server, is not that."""
    if isinstance(exc, urllib.error.HTTPError):
        return False
    if isinstance(exc, FileNotFoundError):
        return Path(exc.filename or "").name == "server.json"
    if isinstance(exc, urllib.error.URLError):
        return isinstance(exc.reason, ConnectionError)
    return isinstance(exc, (NotKeepmind, ConnectionError, ValueError, KeyError))  # a half-written server.json


def reach(setup: Setup, timeout: float, start_wait: float) -> Keepmind:
    """The running Keepmind; when none answers, one started in the background as `keepmind mcp`
    starts one (start_serve), waited for up to `start_wait` seconds: else a turn that ends while
    nothing runs (the MCP server not started yet, or its Keepmind stopped when idle) would be lost.
    Hooks that find none at once take turns on a lock file: one starts it, the others find it up."""
    try:
        return Keepmind(setup, timeout)
    except (OSError, ValueError, KeyError) as exc:
        if not (start_wait and not_running(exc)):
            raise
        if setup.serve is None or not setup.home.is_dir():  # a mistyped --home never becomes a new store
            raise NotStarted(f"Keepmind is not running for {setup.home}: "
                             + (setup.no_start or "there is no data dir there")) from None
    deadline = time.monotonic() + start_wait
    with locked(hooks_dir(setup.home) / "start.lock", start_wait):
        try:
            return Keepmind(setup, timeout)  # another hook started it meanwhile
        except (OSError, ValueError, KeyError) as exc:
            if not not_running(exc):
                raise
        child, log, offset = start_serve(setup)
        while True:
            time.sleep(0.1)
            try:
                return Keepmind(setup, timeout)
            except (OSError, ValueError, KeyError) as exc:
                if not not_running(exc):
                    raise
            cause = start_error(log, offset) if child.poll() is not None else None
            if cause and "already running" not in cause:  # "already running": another one is starting
                raise NotStarted(f"Keepmind could not start: {cause} (log: {log})")
            if time.monotonic() >= deadline:
                raise NotStarted(f"Keepmind, started by the hook, did not answer within {start_wait:g} s"
                                 f" (log: {log})")


def start_serve(setup: Setup) -> tuple[subprocess.Popen, Path, int]:
    """Start `<the MCP server's command> serve --home HOME --stop-after-idle M` detached (it outlives
    the hook), logging to <home>/logs/serve.log as `keepmind mcp`'s start does; it stops itself
    after mcp.server_idle_minutes without a request, so none is orphaned. Returns the child, the
    log and the log's size before it (what follows is the child's)."""
    minutes = configured(setup.home, "mcp.server_idle_minutes")
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or minutes < 0:
        minutes = SERVER_IDLE_MINUTES
    argv = [*setup.serve, "serve", "--home", str(setup.home.resolve())]
    if minutes:  # 0: never stops by itself
        argv += ["--stop-after-idle", f"{minutes:g}"]
    logs = setup.home / "logs"
    logs.mkdir(mode=0o700, exist_ok=True)
    log = logs / "serve.log"
    with contextlib.suppress(OSError):  # past 5 MB it becomes serve.log.1, as `keepmind mcp`'s start does
        if log.stat().st_size > SERVE_LOG_MAX_BYTES:
            os.replace(log, log.with_name(log.name + ".1"))
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    detach = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS} \
        if sys.platform == "win32" else {"start_new_session": True}
    with os.fdopen(fd, "ab") as out:
        offset = os.fstat(fd).st_size
        # Never the hook's stdout or stderr: Claude Code reads them until they close.
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, close_fds=True,
                                 cwd=setup.home, env=setup.environ, **detach)
    return child, log, offset


def start_error(log: Path, offset: int) -> str | None:
    """Why the child failed, from what it wrote to the log after `offset`: its last `error: ...`
    line (the CLI's words for the person), else its last line."""
    try:
        with log.open("rb") as fh:
            fh.seek(offset)
            text = fh.read(256_000).decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line[len("error: "):] for line in lines if line.startswith("error: ")]
    return errors[-1] if errors else (lines[-1][:500] if lines else None)


def state_path(home: Path, claude_session: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", claude_session or "unknown")[:120]
    return hooks_dir(home) / f"{safe}.json"


def lock_path(state: Path) -> Path:
    return state.with_name(state.stem + ".lock")


def private_dir(folder: Path) -> None:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for each in (folder, folder.parent):
        os.chmod(each, 0o700)


@contextlib.contextmanager
def locked(path: Path, wait: float):
    """Hold the lock file `path` (owner-only), waiting up to `wait` seconds for another hook to let go.
    An OS lock (flock; msvcrt.locking on Windows) goes with the process holding it: a hook killed
    while holding it leaves no stale lock."""
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                if fcntl:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                else:
                    msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"another hook held {path.name} for over {wait:g} s") from None
                time.sleep(0.01)
        try:
            yield
        finally:
            if fcntl:
                fcntl.flock(fd, fcntl.LOCK_UN)
            else:
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    finally:
        os.close(fd)


def write_private(path: Path, write) -> None:
    """Replace `path` by what `write(fh)` writes, owner-only, through a temp file of its own (hooks
    running at once never share one) renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def prune(folder: Path) -> None:
    """Remove the state and temp files no hook wrote for STATE_KEEP_DAYS, those of Claude Code
    sessions that ended without a SessionEnd (killed, closed with the machine), and the lock files
    as old whose state is gone (one taken since may be in use: taking a lock does not touch it).
    The recall log and its lock stay. Run when a session is opened or ended: one directory listing."""
    cutoff = time.time() - STATE_KEEP_DAYS * 86_400
    try:
        with os.scandir(folder) as listing:
            old = [Path(e.path) for e in listing if e.name.endswith((".json", ".lock", ".tmp"))
                   and not e.name.startswith(RECALL_LOG) and e.is_file(follow_symlinks=False)
                   and e.stat(follow_symlinks=False).st_mtime < cutoff]
    except OSError:
        return
    for each in sorted(old, key=lambda p: p.suffix == ".lock"):  # the state files first
        if each.suffix != ".lock" or not each.with_suffix(".json").exists():
            with contextlib.suppress(OSError):
                each.unlink()


def log_recall(home: Path, entry: dict) -> None:
    """Append one recall to the owner-only recall log (ids, counts, errors: never the prompt), keeping
    the last RECALL_LOG_KEEP. Nothing is written when the data dir does not exist."""
    if not home.is_dir():
        return
    folder = hooks_dir(home)
    private_dir(folder)
    path = folder / RECALL_LOG
    line = json.dumps({"at": int(time.time() * 1000), **entry}) + "\n"
    with locked(folder / (RECALL_LOG + ".lock"), 3.0):  # a trim must not drop a line another hook added
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(line)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        if len(lines) > 2 * RECALL_LOG_KEEP:
            write_private(path, lambda fh: fh.writelines(lines[-RECALL_LOG_KEEP:]))


def load_state(path: Path) -> dict:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def save_state(path: Path, state: dict) -> None:
    """Write the state owner-only (0600, in a 0700 folder): it names the Keepmind session."""
    private_dir(path.parent)
    write_private(path, lambda fh: json.dump(state, fh))


def text_field(event: dict, name: str) -> str:
    """A string field of the hook's input; missing, null or not a string is empty (never 'None')."""
    value = event.get(name)
    return value if isinstance(value, str) else ""


def held_session(state: dict) -> str | None:
    """The Keepmind session id the state names (a bare id in a state file of an older hook)."""
    held = state.get("session")
    held = held.get("id") if isinstance(held, dict) else held
    return held if isinstance(held, str) and held else None


def session_id(km: Keepmind, home: Path, state: dict, event: dict) -> str:
    """The Keepmind session for this Claude Code session, opened in the scope of setup_for if there
    is none. One opened in another scope (the MCP server's flags, KEEPMIND_AUDIENCE/BOUNDARY or
    keepmind.json changed since, or a state file of an older hook, which kept no scope) is ended and
    replaced."""
    scope = dict(km.scope)
    sid = held_session(state)
    if sid and state["session"] != {"id": sid, **scope}:
        try:
            km.post(f"/sessions/{sid}/end", {})  # distilled in the scope it had
        except (OSError, ValueError):
            pass  # gone already, or beyond the token now: nothing to end
        sid = None
    if not sid:
        folder = Path(text_field(event, "cwd")).name  # "" without a cwd
        opened = km.post("/sessions", {**scope, "channel": "claude-code",
                                       "title": f"Claude Code in {folder}" if folder else "Claude Code"})
        sid = opened["session"]["id"]
        state["session"] = {"id": sid, **scope}
    return sid


def session_for(km: Keepmind, home: Path, path: Path, event: dict, stale: str | None = None) -> str:
    """The Keepmind session of this Claude Code session, read (and opened and saved, if none) under
    the session's lock: hooks started at once would each open one, and the state file keep only
    the last. `stale`: an id the server no longer takes, dropped unless another hook replaced it."""
    with locked(lock_path(path), km.timeout):
        state = load_state(path)
        if stale and held_session(state) == stale:
            state.pop("session")
        before = state.get("session")
        sid = session_id(km, home, state, event)
        if state.get("session") == before:
            return sid
        quietly(save_state, path, state)  # a disk that refuses it still lets this hook post
    prune(path.parent)  # a new session: the time to clear out those of sessions long gone
    return sid


def in_session(km: Keepmind, home: Path, path: Path, event: dict, route: str, body: dict) -> tuple[str, dict]:
    """POST to /sessions/<id>/<route> of this Claude Code session's Keepmind session. A session the
    server no longer takes (stale_session) is dropped and a new one opened, once: else every later
    prompt and turn would fail on the id the state file keeps."""
    stale = None
    for attempt in (1, 2):
        sid = session_for(km, home, path, event, stale)
        try:
            return sid, km.post(f"/sessions/{sid}/{route}", body)
        except urllib.error.HTTPError as exc:
            if attempt == 2 or not stale_session(exc):
                raise
            stale = sid
    raise AssertionError("unreachable")


def remember_recalled(path: Path, wait: float, ids: list[str] | None) -> None:
    """Keep the ids the last recall injected for the turn Stop posts (None: forget them), changing
    only them in the state another hook may be saving at once."""
    if ids is None and not path.exists():
        return  # nothing to forget, and no folder to make
    with locked(lock_path(path), wait):
        state = load_state(path)
        if ids is not None:
            state["recalled_ids"] = ids
        elif state.pop("recalled_ids", None) is None:
            return
        save_state(path, state)


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


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: its head, and a note of how long it was."""
    if len(text) <= limit:
        return text
    note = f"\n[… cut by the Keepmind hook to fit the API's limit: {len(text)} characters in all]"
    return text[:limit - len(note)] + note if limit > len(note) else text[:limit]


def clean(text: str) -> str:
    """Text the server stores: no NUL (refused) and no lone surrogate (UTF-8 cannot carry it)."""
    return re.sub("[\ud800-\udfff]", "\ufffd", text.replace("\x00", ""))


def strings(values) -> list[str]:
    """A list the API takes for tools or recalled ids (webui/schemas.py STRINGS)."""
    return [clean(v)[:MAX_ITEM_CHARS] for v in values if isinstance(v, str)][:MAX_ITEMS] \
        if isinstance(values, list) else []


def fit(body: dict, texts: dict[tuple, int], cap: int) -> dict:
    """`body` with the text at each path in `texts` cut to its character limit, then the longest cut
    further until the body, encoded as it is sent, is at most `cap` bytes: a character of non-ASCII
    text takes 2 to 4 bytes, so text under the character limits can still be over the body cap."""
    def at(path):
        node = body
        for key in path:
            node = node[key]
        return node

    def put(path, value):
        at(path[:-1])[path[-1]] = value

    whole = {path: clean(at(path)) for path in texts}
    for path, limit in texts.items():
        put(path, cut(whole[path], limit))
    for _ in texts:
        size = len(encode(body))
        if size <= cap:
            break
        path = max(texts, key=lambda p: len(encode(at(p))))
        room = cap - (size - len(encode(at(path))))
        fits, over = 0, len(at(path))  # characters kept: the most that fits is in [fits, over)
        while over - fits > 1:
            middle = (fits + over) // 2
            if len(encode(cut(whole[path], middle))) <= room:
                fits = middle
            else:
                over = middle
        put(path, cut(whole[path], fits))
    return body


def compaction_summary(event: dict) -> str:
    """What is about to be compacted, as text: the newest turns that fit SUMMARY_CHARS."""
    turns = conversation(text_field(event, "transcript_path"))
    trigger = str(event.get("trigger") or "auto")
    instructions = str(event.get("custom_instructions") or "").strip()
    folder = Path(text_field(event, "cwd")).name
    head = (f"Claude Code conversation{f' in {folder}' if folder else ''}, before a {trigger} compaction"
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
    for entry in reversed(entries(text_field(event, "agent_transcript_path"))):
        if entry["type"] == "assistant":
            said, _ = text_of(entry["message"].get("content"))
            if said.strip():
                return said.strip()
    return ""


def quietly(fn, *args) -> None:
    """Write the log or the state if the disk lets us; a hook that cannot still exits 0."""
    try:
        fn(*args)
    except OSError:
        pass


def main(argv: list[str]) -> int:
    action = argv[1] if len(argv) > 1 else ""
    if action not in TIMEOUT_S:
        # Not exit 2: on UserPromptSubmit that blocks the prompt, and a memory never stops Claude Code.
        print(f"keepmind hook: unknown action {action!r}\n{__doc__}", file=sys.stderr)
        return 0
    try:
        event = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        event = None
    setup = setup_for(event)
    home = setup.home
    claude_session = event.get("session_id") if isinstance(event, dict) else None
    if not isinstance(claude_session, str) or not claude_session.strip():
        # Malformed input (not a JSON object, no session id): no Claude Code session to attach memory
        # to, and opening one would pool unrelated events in one state file.
        if action == "prompt":
            quietly(log_recall, home, {"claude_session": None, "receipt": None,
                                       "error": "the hook's input was not a Claude Code event with a session_id"})
        return 0
    path = state_path(home, claude_session)
    wait = TIMEOUT_S[action]
    prompt = text_field(event, "prompt")  # never kept: the transcript has it at Stop
    if action == "prompt" and not prompt.strip():
        # Nothing to recall for: no request, no session opened. The last prompt's recalled ids
        # belong to no turn now.
        quietly(remember_recalled, path, wait, None)
        quietly(log_recall, home, {"claude_session": claude_session, "receipt": None,
                                   "error": "the prompt was empty: nothing to recall"})
        return 0
    if action == "end":
        end(setup, path, wait)
        return 0
    try:
        km = reach(setup, wait, START_WAIT_S[action])
        cap = body_cap(home)
        if action == "prompt":
            # recall reads the first RECALL_CHARS characters: more would only be a 400 past MAX_TURN_CHARS
            asked = fit({"message": prompt[:RECALL_CHARS]}, {("message",): RECALL_CHARS}, cap)
            sid, result = in_session(km, home, path, event, "recall", asked)
            if result.get("block"):
                print(result["block"])
            quietly(remember_recalled, path, wait, [i["id"] for i in result.get("items", [])])
            log_recall(home, {"claude_session": claude_session, "session": sid, "receipt": result.get("receipt"),
                              "injected": len(result.get("items", [])), "degraded": result.get("degraded") or []})
        elif action == "stop":
            user, assistant, tools = last_turn(text_field(event, "transcript_path"))
            if user.strip() or assistant.strip():
                turn = {"user": user, "assistant": assistant, "tools": strings(tools),
                        "recalled_ids": strings(load_state(path).get("recalled_ids"))}
                in_session(km, home, path, event, "turns",
                           fit(turn, {("user",): MAX_TURN_CHARS, ("assistant",): MAX_TURN_CHARS}, cap))
            quietly(remember_recalled, path, wait, None)
        elif action == "precompact":
            summary = compaction_summary(event)
            if summary:
                in_session(km, home, path, event, "compaction",
                           fit({"summary": summary}, {("summary",): SUMMARY_CHARS}, cap))
        elif action == "subagent":
            reply = final_reply(event)
            if reply:
                kind = str(event.get("agent_type") or "subagent")
                first = reply.splitlines()[0].strip(" #*")
                findings = {"findings": [{"title": clip(f"{kind}: {first}", 120), "content": clip(reply, FINDING_CHARS),
                                          "tags": ["claude-code", f"agent:{kind}"[:200]]}]}
                in_session(km, home, path, event, "findings",
                           fit(findings, {("findings", 0, "title"): MAX_TITLE_CHARS,
                                          ("findings", 0, "content"): FINDING_CHARS}, cap))
    except (OSError, ValueError, KeyError, urllib.error.URLError) as exc:
        print(f"keepmind hook ({action}): {why_not(home, exc)}", file=sys.stderr)  # Claude Code's debug log
        if action == "prompt":
            quietly(log_recall, home, {"claude_session": claude_session, "receipt": None, "error": why_not(home, exc)})
    return 0


def end(setup: Setup, path: Path, wait: float) -> None:
    """SessionEnd: end the Keepmind session (distilled one last time) and forget it. The state file
    goes even when Keepmind cannot be reached: the server passivates the session it named once idle
    for session.idle_timeout_minutes (30 by default), which distils it one last time too."""
    home = setup.home
    try:
        if path.exists():
            with locked(lock_path(path), wait):  # not while a hook starting now opens the session
                end_held(setup, path, wait)
        else:
            end_held(setup, path, wait)  # no session to end: says so if Keepmind is not there
    except OSError as exc:  # the lock: forget the session all the same
        print(f"keepmind hook (end): {why_not(home, exc)}", file=sys.stderr)
        path.unlink(missing_ok=True)
    prune(hooks_dir(home))


def end_held(setup: Setup, path: Path, wait: float) -> None:
    home = setup.home
    sid = held_session(load_state(path))
    try:
        km = Keepmind(setup, wait)
        if sid:
            try:
                km.post(f"/sessions/{sid}/end", {})
            except urllib.error.HTTPError as exc:
                if not stale_session(exc):  # gone or ended already: nothing left to end
                    raise
    except (OSError, ValueError, KeyError, urllib.error.URLError) as exc:
        left = f"; Keepmind passivates session {sid} once it has been idle for session.idle_timeout_minutes"
        print(f"keepmind hook (end): {why_not(home, exc)}{left if sid else ''}", file=sys.stderr)
    finally:
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    try:
        code = main(sys.argv)
    except Exception as exc:  # noqa: BLE001 - a bug must not stop Claude Code either: said on stderr, exit 0
        print(f"keepmind hook: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 0
    sys.exit(code)
