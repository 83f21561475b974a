"""The Claude Code hook script: prompt -> recall block (logged for `recall explain --last`), stop -> the
turn posted, PreCompact -> the compaction summary, SubagentStop -> findings, end -> session ended."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from keepmind.desktop.cli import main as cli

HOOK = Path(__file__).resolve().parents[2] / "packaging" / "agents" / "claude-code" / "keepmind_hook.py"


@pytest.fixture
def live(tmp_path, clock, start_live):
    home = tmp_path / "home"
    home.mkdir()
    (home / "keepmind.json").write_text(json.dumps({"mcp": {"audience": "personal", "boundary": "work"}}))
    server = start_live(home, clock=clock)
    yield server
    server.stop()


def claude_free(env: dict, home: Path) -> dict:
    """`env` without Claude Code's own settings: no project, and a config dir with no .claude.json (a
    keepmind MCP server configured on this machine must not decide where these hooks go)."""
    env = {k: v for k, v in env.items() if not k.startswith("CLAUDE_")}
    env["CLAUDE_CONFIG_DIR"] = str(home.parent / "no-claude-config")
    return env


def run_hook(home: Path, action: str, event, *, raw: bool = False, **env_vars: str) -> subprocess.CompletedProcess:
    """Run the hook with `event` as JSON on stdin (`raw`: the string as it is); `env_vars` as KEEPMIND_*."""
    env = claude_free({k: v for k, v in os.environ.items() if not k.startswith("KEEPMIND_")}, home)
    env.update(KEEPMIND_HOME=str(home), **env_vars)
    return subprocess.run([sys.executable, str(HOOK), action], input=event if raw else json.dumps(event),
                          capture_output=True, text=True, timeout=60, env=env)


def write_transcript(path: Path) -> None:
    entries = [
        {"type": "user", "message": {"role": "user", "content": "Which grinder do I use?"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Let me check."}, {"type": "tool_use", "name": "find_memories", "input": {}}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "..."}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "You use a Baratza grinder."}]}},
    ]
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")


def test_prompt_stop_and_end_hooks_drive_a_keepmind_session(live, tmp_path):
    home = live.daemon.home
    sid = live.engine.open_session("personal", "work")
    live.engine.store(sid, "Coffee", "The user grinds espresso with a Baratza grinder.")
    event = {"session_id": "claude-abc", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
             "prompt": "Which grinder do I use?"}
    prompt = run_hook(home, "prompt", event)
    assert prompt.returncode == 0, prompt.stderr
    if hasattr(live.engine, "recall"):
        assert "Baratza" in prompt.stdout  # the block is printed for Claude's context
    else:
        assert prompt.stdout == "" and "503" in prompt.stderr  # recall not built yet: nothing injected
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript)
    stop = run_hook(home, "stop", {"session_id": "claude-abc", "transcript_path": str(transcript),
                                   "hook_event_name": "Stop", "stop_hook_active": False})
    assert stop.returncode == 0 and stop.stderr == "", stop.stderr
    with live.engine.db.snapshot() as conn:
        session = conn.execute("SELECT session_id, audience, boundary, channel FROM sessions"
                               " WHERE channel='claude-code'").fetchall()
        assert len(session) == 1 and session[0][1:] == ("personal", "work", "claude-code")
        turns = conn.execute("SELECT user_text, assistant_text, tools_json FROM session_turns WHERE session_id=?",
                             (session[0][0],)).fetchall()
    assert turns == [("Which grinder do I use?", "Let me check.\n\nYou use a Baratza grinder.", '["find_memories"]')]
    end = run_hook(home, "end", {"session_id": "claude-abc", "hook_event_name": "SessionEnd", "reason": "other"})
    assert end.returncode == 0, end.stderr
    with live.engine.db.snapshot() as conn:
        assert conn.execute("SELECT status FROM sessions WHERE session_id=?", (session[0][0],)).fetchone()[0] == "ended"


def test_hooks_never_block_when_keepmind_is_not_running(tmp_path):
    result = run_hook(tmp_path / "nowhere", "prompt", {"session_id": "x", "prompt": "hello"})
    assert result.returncode == 0 and result.stdout == ""


# -- as Claude Code runs them: the command settings.json names, through a shell -------------------

RECIPE = HOOK.parent


def project_with_recipe(tmp_path: Path) -> Path:
    """A project set up as the README says: the hook in .claude/hooks/, settings.json as .claude/settings.json."""
    project = tmp_path / "myproject"
    (project / ".claude" / "hooks").mkdir(parents=True)
    shutil.copy(RECIPE / "keepmind_hook.py", project / ".claude" / "hooks" / "keepmind_hook.py")
    shutil.copy(RECIPE / "settings.json", project / ".claude" / "settings.json")
    return project


def run_as_claude_code(project: Path, home: Path, event: dict) -> subprocess.CompletedProcess:
    """Run every command hook settings.json registers for the event, as Claude Code does: through a
    shell, with CLAUDE_PROJECT_DIR set and the event's JSON on stdin."""
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    (group,) = settings["hooks"][event["hook_event_name"]]
    if "matcher" in group:
        assert re.fullmatch(group["matcher"], event.get("trigger") or event.get("agent_type") or "")
    (hook,) = group["hooks"]
    env = claude_free({k: v for k, v in os.environ.items() if not k.startswith("KEEPMIND_")}, home)
    env.update(KEEPMIND_HOME=str(home), CLAUDE_PROJECT_DIR=str(project))
    base = {"session_id": "claude-abc", "transcript_path": str(project / "t.jsonl"), "cwd": str(project),
            "permission_mode": "default"}
    return subprocess.run(hook["command"], shell=True, input=json.dumps({**base, **event}), capture_output=True,
                          text=True, timeout=hook["timeout"] + 30, env=env, cwd=project)


def transcript_with_a_compaction(path: Path) -> None:
    entries = [
        {"type": "user", "message": {"role": "user", "content": "We settled the old question of tabs."}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Tabs it is."}]}},
        {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"},
        {"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "Summary: tabs."}},
        {"type": "user", "message": {"role": "user", "content": "Which grinder should the office buy?"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "name": "WebSearch", "input": {}}]}},
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "results"}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "The Niche Zero: single-dosing, low retention."}]}},
    ]
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")


def checkpoints_of(engine, trigger: str) -> list[dict]:
    with engine.db.snapshot() as conn:
        return [json.loads(p) for (p,) in conn.execute(
            "SELECT payload_json FROM memory_checkpoints WHERE trigger_type=? ORDER BY created_at", (trigger,))]


def test_precompact_posts_what_is_about_to_be_compacted(live, tmp_path):
    project = project_with_recipe(tmp_path)
    transcript_with_a_compaction(project / "t.jsonl")
    done = run_as_claude_code(project, live.daemon.home, {
        "hook_event_name": "PreCompact", "trigger": "manual", "custom_instructions": "keep the grinder choice"})
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done.stderr
    (payload,) = checkpoints_of(live.engine, "compaction-boundary")
    summary = payload["proposal"]["content"]
    assert summary.startswith("Claude Code conversation in myproject, before a manual compaction "
                              "(asked to keep: keep the grinder choice).")
    assert "User: Which grinder should the office buy?" in summary
    assert "Assistant: The Niche Zero: single-dosing, low retention." in summary
    assert "tabs" not in summary.lower() and "results" not in summary  # compacted before; tool output
    with live.engine.db.snapshot() as conn:
        (channel, epoch) = conn.execute("SELECT channel, compaction_epoch FROM sessions").fetchone()
    assert channel == "claude-code" and epoch == 1  # recall may inject again what the context forgot


def test_subagent_stop_posts_the_subagents_answer_as_findings(live, tmp_path):
    project = project_with_recipe(tmp_path)
    done = run_as_claude_code(project, live.daemon.home, {
        "hook_event_name": "SubagentStop", "stop_hook_active": False, "agent_id": "a1b2c3",
        "agent_type": "Explore", "agent_transcript_path": str(project / "missing.jsonl"),
        "last_assistant_message": "The flaky test is test_sync: it sleeps 0.1 s instead of waiting."})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    agent_transcript = project / "agent-d4e5.jsonl"  # an older Claude Code: no last_assistant_message
    agent_transcript.write_text("\n".join(json.dumps(e) for e in [
        {"type": "user", "message": {"role": "user", "content": "Find where config is loaded."}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Config is loaded once, in app/settings.py:load()."}]}}]) + "\n")
    done = run_as_claude_code(project, live.daemon.home, {
        "hook_event_name": "SubagentStop", "stop_hook_active": False, "agent_id": "d4e5",
        "agent_type": "general-purpose", "agent_transcript_path": str(agent_transcript)})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    found = [p["proposal"] for p in checkpoints_of(live.engine, "subagent-findings")]
    assert [f["content"] for f in found] == ["The flaky test is test_sync: it sleeps 0.1 s instead of waiting.",
                                             "Config is loaded once, in app/settings.py:load()."]
    assert found[0]["title"].startswith("Explore: The flaky test") and "agent:Explore" in found[0]["facets"]
    assert all(f["memory_class"] == "evidence" for f in found)


def test_each_recall_is_logged_where_recall_explain_last_finds_it(live, tmp_path, capsys):
    home = live.daemon.home
    project = project_with_recipe(tmp_path)
    sid = live.engine.open_session("personal", "work")
    live.engine.store(sid, "Coffee", "The user grinds espresso with a Baratza grinder.")
    secret_prompt = "Which grinder do I use for espresso?"
    for prompt in ("Plan the sprint review for Thursday.", secret_prompt):
        done = run_as_claude_code(project, home, {"hook_event_name": "UserPromptSubmit", "prompt": prompt})
        assert done.returncode == 0, done.stderr
    log = home / "hooks" / "claude-code" / "recalls.jsonl"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["claude_session"] for e in entries] == ["claude-abc", "claude-abc"]
    assert all(e["receipt"].startswith("rcp-") for e in entries) and entries[1]["injected"] == 1
    assert "grinder" not in log.read_text() and "sprint" not in log.read_text()  # ids and counts, no prompt
    assert cli(["recall", "explain", "--last", "--home", str(home)]) == 0
    last = capsys.readouterr().out
    assert entries[1]["receipt"] in last and "injected 1 of" in last and "Coffee" in last
    assert "Claude Code session claude-abc" in last
    assert cli(["recall", "explain", "--last", "2", "--home", str(home)]) == 0
    both = capsys.readouterr().out
    assert entries[0]["receipt"] in both and "why nothing:" in both
    live.stop()  # Keepmind is gone: the hook says why it could not ask
    done = run_as_claude_code(project, home, {"hook_event_name": "UserPromptSubmit", "prompt": "hello?"})
    assert done.returncode == 0 and done.stdout == ""
    assert cli(["recall", "explain", "--last", "--home", str(home)]) == 0
    assert f"no recall: Keepmind is not running for {home}" in capsys.readouterr().out


def test_the_recipe_registers_every_moment_the_hook_handles():
    settings = json.loads((RECIPE / "settings.json").read_text())["hooks"]
    assert set(settings) == {"UserPromptSubmit", "Stop", "PreCompact", "SubagentStop", "SessionEnd"}
    actions = {event: group[0]["hooks"][0]["command"].rsplit(" ", 1)[1] for event, group in settings.items()}
    assert actions == {"UserPromptSubmit": "prompt", "Stop": "stop", "PreCompact": "precompact",
                       "SubagentStop": "subagent", "SessionEnd": "end"}


# -- malformed input and sessions the server no longer takes --------------------------------------


def hook_sessions(engine) -> list[tuple]:
    with engine.db.snapshot() as conn:
        return conn.execute("SELECT session_id, audience, boundary, title, status FROM sessions"
                            " WHERE channel='claude-code' ORDER BY created_at, rowid").fetchall()


def recall_log(home: Path) -> list[dict]:
    log = home / "hooks" / "claude-code" / "recalls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("stdin", ["[]", "null", '"x"', "not json", "", '{"session_id": 123, "prompt": "hello"}',
                                   '{"prompt": "hello", "cwd": "/tmp"}', '{"session_id": " ", "prompt": "hello"}'])
def test_malformed_input_is_ignored_quietly_and_logged(live, stdin):
    home = live.daemon.home
    for action in ("prompt", "stop", "precompact", "subagent", "end"):
        done = run_hook(home, action, stdin, raw=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), (action, done.stderr)
    assert hook_sessions(live.engine) == []  # no session opened from an event without a session id
    assert not (home / "hooks" / "claude-code" / "unknown.json").exists()
    (entry,) = recall_log(home)  # the prompt's, so `recall explain --last` says why nothing came
    assert entry["receipt"] is None and "session_id" in entry["error"]


def test_a_null_prompt_is_empty_and_recalls_nothing(live):
    home = live.daemon.home
    done = run_hook(home, "prompt", {"session_id": "claude-abc", "prompt": None})
    assert (done.returncode, done.stdout) == (0, "")
    assert hook_sessions(live.engine) == []  # not a recall of the message 'None'
    (entry,) = recall_log(home)
    assert entry["receipt"] is None and "empty" in entry["error"]


def test_a_session_opened_without_a_cwd_is_titled_without_an_empty_folder_name(live):
    done = run_hook(live.daemon.home, "prompt", {"session_id": "claude-abc", "prompt": "Plan the review."})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert [row[3] for row in hook_sessions(live.engine)] == ["Claude Code"]


def test_an_unknown_action_never_blocks_the_prompt():
    # exit 2 on UserPromptSubmit would block the prompt in Claude Code
    done = subprocess.run([sys.executable, str(HOOK), "bogus"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    assert "unknown action 'bogus'" in done.stderr and "keepmind_hook.py prompt" in done.stderr


def test_a_session_the_server_no_longer_knows_is_replaced_once(live):
    home = live.daemon.home
    sid = live.engine.open_session("personal", "work")
    live.engine.store(sid, "Coffee", "The user grinds espresso with a Baratza grinder.")
    state = home / "hooks" / "claude-code" / "claude-abc.json"
    state.parent.mkdir(parents=True)
    gone = "ses-" + "0" * 32
    state.write_text(json.dumps({"session": {"id": gone, "audience": "personal", "boundary": "work"}}))
    done = run_hook(home, "prompt", {"session_id": "claude-abc", "prompt": "Which grinder do I use?"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "Baratza" in done.stdout
    ((new, audience, boundary, _, status),) = hook_sessions(live.engine)
    assert (audience, boundary, status) == ("personal", "work", "open")
    assert json.loads(state.read_text())["session"] == {"id": new, "audience": "personal", "boundary": "work"}
    assert recall_log(home)[-1]["session"] == new and recall_log(home)[-1]["receipt"].startswith("rcp-")


def test_an_ended_session_is_replaced_and_the_turn_kept(live, tmp_path):
    home = live.daemon.home
    done = run_hook(home, "prompt", {"session_id": "claude-abc", "prompt": "Which grinder do I use?"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    ((first, *_),) = hook_sessions(live.engine)
    live.engine.end_session(first)  # e.g. ended from elsewhere, or distilled after a restart
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript)
    stop = run_hook(home, "stop", {"session_id": "claude-abc", "transcript_path": str(transcript)})
    assert stop.returncode == 0 and stop.stderr == "", stop.stderr
    (_, (second, *_, status)) = hook_sessions(live.engine)
    assert second != first and status == "open"
    with live.engine.db.snapshot() as conn:
        turns = conn.execute("SELECT session_id, user_text FROM session_turns").fetchall()
    assert turns == [(second, "Which grinder do I use?")]


def test_a_changed_scope_or_token_opens_a_session_in_the_scope_configured_now(live):
    home = live.daemon.home
    event = {"session_id": "claude-abc", "prompt": "Plan the sprint review."}
    assert run_hook(home, "prompt", event).returncode == 0
    done = run_hook(home, "prompt", event, KEEPMIND_BOUNDARY="other")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    team = live.make_token("team-agent", "team")  # the personal sessions are beyond it: 404 to it
    done = run_hook(home, "prompt", event, KEEPMIND_TOKEN=team, KEEPMIND_AUDIENCE="team", KEEPMIND_BOUNDARY="other")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    rows = hook_sessions(live.engine)
    assert [(audience, boundary) for _, audience, boundary, _, _ in rows] == [
        ("personal", "work"), ("personal", "other"), ("team", "other")]
    # the one replaced by the scope change was ended (distilled); the second is beyond the team
    # token, which can neither use nor end it
    assert [status for *_, status in rows] == ["ended", "open", "open"]
    assert all(e.get("receipt", "").startswith("rcp-") for e in recall_log(home))


def test_a_state_file_of_an_older_hook_without_the_scope_is_ended_and_replaced(live):
    home = live.daemon.home
    old = live.engine.open_session("personal", "home", channel="claude-code")
    state = home / "hooks" / "claude-code" / "claude-abc.json"
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"session": old}))  # a bare id: in which scope it was opened is unknown
    done = run_hook(home, "prompt", {"session_id": "claude-abc", "prompt": "Plan the sprint review."})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (first, second) = hook_sessions(live.engine)
    assert first[0] == old and first[4] == "ended"
    assert second[1:3] == ("personal", "work") and json.loads(state.read_text())["session"]["id"] == second[0]


# -- what the API takes: turns and prompts over its limits are cut, not dropped ---------------------

MAX_TURN_CHARS = 200_000  # engine/sessions.py
MAX_BODY_BYTES = 1_048_576  # engine/settings.py server.max_body_bytes


def write_turn(path: Path, user: str, assistant: str) -> None:
    path.write_text("\n".join(json.dumps(e) for e in [
        {"type": "user", "message": {"role": "user", "content": user}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": assistant}]}},
    ]) + "\n")


def saved_turns(engine) -> list[tuple[str, str, str]]:
    with engine.db.snapshot() as conn:
        return conn.execute("SELECT session_id, user_text, assistant_text FROM session_turns"
                            " ORDER BY turn_index").fetchall()


def test_a_turn_over_the_apis_limit_is_cut_and_kept(live, tmp_path):
    home = live.daemon.home
    pasted = "Please review this file:\n" + "".join(f"line {n}: " + "x" * 60 + "\n" for n in range(4000))
    assert len(pasted) > 266_000
    transcript = tmp_path / "t.jsonl"
    write_turn(transcript, pasted, "It looks fine.")
    stop = run_hook(home, "stop", {"session_id": "claude-abc", "transcript_path": str(transcript)})
    assert stop.returncode == 0 and stop.stderr == "", stop.stderr
    ((_, user, assistant),) = saved_turns(live.engine)
    assert assistant == "It looks fine."
    assert len(user) <= MAX_TURN_CHARS and user.startswith(pasted[:150_000])
    assert user.endswith(f"{len(pasted)} characters in all]")  # the cut is said, with how long it was


def test_non_ascii_turns_fit_the_body_cap_in_bytes(live, tmp_path):
    home = live.daemon.home
    transcript = tmp_path / "t.jsonl"
    # under the character limits, over 1 MB as JSON with \uXXXX escapes: sent whole, in UTF-8
    write_turn(transcript, "日本語のテキスト。" * 20_000, "é" * 150_000)
    stop = run_hook(home, "stop", {"session_id": "claude-abc", "transcript_path": str(transcript)})
    assert stop.returncode == 0 and stop.stderr == "", stop.stderr
    # over the body cap even in UTF-8 (3 bytes a character): the longer text is cut to fit
    big_user, big_reply = "日" * 199_000, "本" * 190_000
    write_turn(transcript, big_user, big_reply)
    stop = run_hook(home, "stop", {"session_id": "claude-abc", "transcript_path": str(transcript)})
    assert stop.returncode == 0 and stop.stderr == "", stop.stderr
    (first, second) = saved_turns(live.engine)
    assert first[1:] == ("日本語のテキスト。" * 20_000, "é" * 150_000)
    _, user, reply = second
    assert reply == big_reply and user.startswith("日" * 100_000) and user.endswith("199000 characters in all]")
    body = json.dumps({"user": user, "assistant": reply, "tools": [], "recalled_ids": []}, ensure_ascii=False)
    assert MAX_BODY_BYTES - 1000 < len(body.encode("utf-8")) <= MAX_BODY_BYTES  # as much as fits


def test_a_prompt_over_the_apis_limit_still_gets_recall(live):
    home = live.daemon.home
    sid = live.engine.open_session("personal", "work")
    live.engine.store(sid, "Coffee", "The user grinds espresso with a Baratza grinder.")
    prompt = "Which grinder do I use for espresso?\n" + "lorem ipsum " * 25_000
    assert len(prompt) > MAX_TURN_CHARS
    done = run_hook(home, "prompt", {"session_id": "claude-abc", "prompt": prompt})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "Baratza" in done.stdout
    assert recall_log(home)[-1]["receipt"].startswith("rcp-")


def test_an_error_says_what_the_server_said(live, tmp_path):
    home = live.daemon.home
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript)
    done = run_hook(home, "stop", {"session_id": "claude-abc", "transcript_path": str(transcript)},
                    KEEPMIND_BOUNDARY=" ")  # refused by the server: a blank boundary
    assert done.returncode == 0
    assert "Keepmind answered 400: boundary is blank" in done.stderr and "BAD REQUEST" not in done.stderr
    done = run_hook(home, "prompt", {"session_id": "claude-abc", "prompt": "Which grinder?"}, KEEPMIND_BOUNDARY=" ")
    assert done.returncode == 0 and "Keepmind answered 400: boundary is blank" in done.stderr
    assert "boundary is blank" in recall_log(home)[-1]["error"]


# -- hooks started at once share one Keepmind session ---------------------------------------------


def run_at_once(home: Path, runs: list[tuple[str, dict]]) -> list[tuple[int, str, str]]:
    """Start a hook process per (action, event), then give each its input at once (Claude Code runs
    the hooks of events that come together in parallel): (exit code, stdout, stderr) of each."""
    env = claude_free({k: v for k, v in os.environ.items() if not k.startswith("KEEPMIND_")}, home)
    env.update(KEEPMIND_HOME=str(home))
    hooks = [subprocess.Popen([sys.executable, str(HOOK), action], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for action, _ in runs]
    for hook, (_, event) in zip(hooks, runs):
        hook.stdin.write(json.dumps(event))
    for hook in hooks:
        hook.stdin.close()
    done = []
    for hook in hooks:
        with hook:
            done.append((hook.wait(timeout=60), hook.stdout.read(), hook.stderr.read()))
    return done


def test_hooks_started_at_once_open_one_keepmind_session(live, tmp_path):
    home = live.daemon.home
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript)
    events = [("prompt", {"prompt": "Which grinder do I use?"}),
              ("stop", {"transcript_path": str(transcript)}),
              *[("subagent", {"agent_type": "Explore", "last_assistant_message": f"Finding number {n}."})
                for n in range(4)]]
    done = run_at_once(home, [(action, {"session_id": "claude-new", "cwd": str(tmp_path), **event})
                              for action, event in events])
    assert done == [(0, done[0][1], "")] + [(0, "", "")] * 5
    ((sid, *_),) = hook_sessions(live.engine)  # one session, not one a hook
    assert [turn[0] for turn in saved_turns(live.engine)] == [sid]
    with live.engine.db.snapshot() as conn:
        findings = conn.execute("SELECT session_id FROM memory_checkpoints WHERE trigger_type='subagent-findings'"
                                ).fetchall()
    assert findings == [(sid,)] * 4
    assert [e["session"] for e in recall_log(home)] == [sid]
    folder = home / "hooks" / "claude-code"
    assert json.loads((folder / "claude-new.json").read_text())["session"]["id"] == sid
    assert not list(folder.glob("*.tmp"))
    assert stat.S_IMODE((folder / "claude-new.lock").stat().st_mode) == 0o600


def test_hooks_trimming_the_recall_log_at_once_lose_no_line(live):
    home = live.daemon.home
    folder = home / "hooks" / "claude-code"
    folder.mkdir(parents=True)
    # long enough that the hooks appending to it at once each see it over the limit and trim it
    (folder / "recalls.jsonl").write_text((json.dumps({"old": "entry"}) + "\n") * 1_000_000)
    done = run_at_once(home, [("prompt", {"session_id": f"claude-{n}", "prompt": "Plan the sprint review."})
                              for n in range(8)])
    assert done == [(0, "", "")] * 8
    logged = recall_log(home)
    assert sorted(e["claude_session"] for e in logged if "claude_session" in e) == [f"claude-{n}" for n in range(8)]
    assert len(logged) == 200 + 7  # trimmed once, to the last 200 with the first hook's line
    assert not list(folder.glob("*.tmp"))


# -- SessionEnd while Keepmind is down; state of sessions long gone --------------------------------


def test_session_end_forgets_the_session_while_keepmind_is_down(live):
    home = live.daemon.home
    done = run_hook(home, "prompt", {"session_id": "claude-abc", "prompt": "Plan the sprint review."})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    state = home / "hooks" / "claude-code" / "claude-abc.json"
    ((sid, *_, status),) = hook_sessions(live.engine)
    assert held_in(state) == sid and status == "open"
    live.stop()
    end = run_hook(home, "end", {"session_id": "claude-abc", "hook_event_name": "SessionEnd", "reason": "other"})
    assert end.returncode == 0 and end.stdout == ""
    assert not state.exists()  # forgotten: the server passivates the session once it has been idle
    assert f"Keepmind is not running for {home}" in end.stderr and f"passivates session {sid}" in end.stderr


def held_in(state: Path) -> str:
    return json.loads(state.read_text())["session"]["id"]


def test_state_of_sessions_long_gone_is_pruned(live):
    home = live.daemon.home
    folder = home / "hooks" / "claude-code"
    folder.mkdir(parents=True)
    long_ago = time.time() - 8 * 86_400
    gone = {"claude-old.json": '{"session": {"id": "ses-' + "1" * 32 + '"}}', "claude-old.lock": "",
            "claude-old.json.x1y2.tmp": "{"}
    for name, text in gone.items():
        (folder / name).write_text(text)
        os.utime(folder / name, (long_ago, long_ago))
    (folder / "claude-recent.json").write_text('{"session": {"id": "ses-' + "2" * 32 + '"}}')
    (folder / "claude-recent.lock").write_text("")  # made long ago, taken by every hook since
    os.utime(folder / "claude-recent.lock", (long_ago, long_ago))
    (folder / "recalls.jsonl").write_text(json.dumps({"old": 1}) + "\n")
    (folder / "recalls.jsonl.lock").write_text("")
    for name in ("recalls.jsonl", "recalls.jsonl.lock"):  # kept, however old
        os.utime(folder / name, (long_ago, long_ago))
    done = run_hook(home, "prompt", {"session_id": "claude-abc", "prompt": "Plan the sprint review."})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    left = sorted(p.name for p in folder.iterdir())
    assert left == ["claude-abc.json", "claude-abc.lock", "claude-recent.json", "claude-recent.lock",
                    "recalls.jsonl", "recalls.jsonl.lock"]
    (folder / "claude-older.json").write_text("{}")
    os.utime(folder / "claude-older.json", (long_ago, long_ago))
    end = run_hook(home, "end", {"session_id": "claude-abc"})  # an ending session prunes too
    assert end.returncode == 0 and end.stderr == "", end.stderr
    assert not (folder / "claude-abc.json").exists() and not (folder / "claude-older.json").exists()
