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


def run_hook(home: Path, action: str, event: dict) -> subprocess.CompletedProcess:
    env = {**os.environ, "KEEPMIND_HOME": str(home)}
    env.pop("KEEPMIND_BOUNDARY", None)
    return subprocess.run([sys.executable, str(HOOK), action], input=json.dumps(event), capture_output=True,
                          text=True, timeout=60, env=env)


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
    env = {k: v for k, v in os.environ.items() if not k.startswith("KEEPMIND_") or k == "KEEPMIND_HOME"}
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
