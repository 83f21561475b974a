"""Settings as a running Keepmind shows and changes them (the settings page).

A change is validated with the rest of keepmind.json, written atomically (every other key of a
hand-edited file kept), and applied at once when its key is `live`; other keys apply at the next
start, and the page says so until then. The LLM's API key is never shown or stored: only the name
of the environment variable that holds it, and whether the running Keepmind has one.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

from .errors import SettingsError
from .settings import KEY_INDEX, KEYS, Settings, group_of, group_titles, read_raw, save_changes, validate

TEST_SYSTEM = "You check a connection. Answer with the single word: ok"


@dataclass(frozen=True)
class SettingView:
    name: str
    group: str
    doc: str
    default: object
    running: object  # what the running Keepmind uses
    saved: object  # what keepmind.json says (the default when it does not say)
    live: bool
    choices: tuple[str, ...] | None = None  # the only values the key takes, when they are a few words

    @property
    def pending_restart(self) -> bool:
        """Saved, but the running Keepmind still uses another value until it starts again."""
        return self.saved != self.running

    @property
    def kind(self) -> str:
        """How a form shows it: bool (true/false), optional-bool, choice (one of a few words),
        json (objects) or text."""
        if self.choices:
            return "choice"
        sample = self.default if self.default is not None else self.saved
        if isinstance(sample, bool) or self.name.endswith(".enabled"):
            return "bool" if self.default is not None else "optional-bool"
        if isinstance(sample, (dict, list)):
            return "json"
        return "text"


def as_text(value) -> str:
    """A value as a form field shows it (null is an empty field)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def from_text(name: str, text: str):
    """A form field's text as the value of `name`: empty is the key's default (null for a key whose
    default is none; a cleared number field said "is None", not "back to 300"); a string when the key
    takes one as written, else JSON (numbers, true/false, objects). The key's own check decides after."""
    key = KEY_INDEX.get(name)
    text = (text or "").strip()
    if key is None:
        return None
    if text == "":
        return key.default
    try:
        return key.check(text)
    except ValueError:
        pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: 10,000 nested brackets pasted in a field
        return text  # validation names the key and what it accepts


def views(settings: Settings, path: Path) -> list[tuple[str, list[SettingView]]]:
    """Every documented key, grouped as docs/settings.md groups them."""
    try:
        saved = validate(read_raw(path)).values
    except SettingsError:
        saved = dict(settings.values)  # a broken file: the page says so; show what runs
    grouped: dict[str, list[SettingView]] = {title: [] for title in group_titles()}
    for key in KEYS:
        group = group_of(key.name)
        grouped.setdefault(group, []).append(SettingView(
            key.name, group, key.doc, key.default, settings.values.get(key.name, key.default),
            saved.get(key.name, key.default), key.live, getattr(key.check, "choices", None)))
    return [(title, items) for title, items in grouped.items() if items]


def file_problem(path: Path) -> str | None:
    """What is wrong with keepmind.json as it is on disk (None when it loads)."""
    try:
        validate(read_raw(path))
    except SettingsError as exc:
        return exc.message
    return None


def changed(settings: Settings, path: Path, submitted: dict[str, str]) -> dict:
    """The submitted form fields whose value differs from what the file says now."""
    try:
        saved = validate(read_raw(path)).values
    except SettingsError:
        saved = settings.values
    out = {}
    for name, text in submitted.items():
        if name not in KEY_INDEX:
            continue
        value = from_text(name, text)
        if value != saved.get(name) and as_text(value) != as_text(saved.get(name)):
            out[name] = value
    return out


def apply(settings: Settings, path: Path, changes: dict) -> tuple[Settings, list[str], list[str]]:
    """Write `changes` (SettingsError naming the key and the allowed values when one is bad);
    the running settings with the live ones applied, and which applied now and which at restart."""
    checked = save_changes(path, changes)
    # A key saved back to the value the running Keepmind uses is in effect now, live or not: only a
    # value the process does not run with waits for the next start.
    now = [n for n in changes if KEY_INDEX[n].live or checked[n] == settings.values.get(n)]
    later = [n for n in changes if n not in now]
    values = dict(settings.values)
    values.update({n: checked[n] for n in now})
    return Settings(values, settings.warnings), now, later


def test_llm(settings: Settings, path: Path, api_key: str | None, clock=None, transport=None) -> dict:
    """Ask the curation LLM saved in keepmind.json for one word: whether it answers, and how fast."""
    from .writepath.llm import ChatClient, LlmError, config_from_settings

    try:
        saved = validate(read_raw(path))
    except SettingsError as exc:
        return {"ok": False, "message": exc.message}
    config = config_from_settings(saved, api_key)
    if config is None:
        return {"ok": False, "message": "no curation LLM is configured: set memory.llm.base_url and "
                                        "memory.llm.model first (without one, rules distil and curation "
                                        "never merges)"}
    client = ChatClient(replace(config, timeout_s=min(config.timeout_s, 30.0)), clock=clock, transport=transport)
    started = time.perf_counter()
    try:
        reply = client.complete(TEST_SYSTEM, "ping", purpose="connection test")
    except LlmError as exc:
        return {"ok": False, "message": f"{config.model} at {config.base_url} did not answer ({exc.kind}): "
                                        f"{exc.message}", "model": config.model}
    finally:
        client.close()
    ms = (time.perf_counter() - started) * 1000
    return {"ok": True, "message": f"{reply.model} at {config.base_url} answered in {ms:.0f} ms",
            "model": reply.model, "ms": round(ms)}


__all__ = ["SettingView", "apply", "as_text", "changed", "file_problem", "from_text", "test_llm", "views"]
