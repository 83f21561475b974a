"""Settings: `keepmind.json` in the data dir, every key documented and validated on load.

The file may be flat (`{"memory.enabled": false}`) or nested (`{"memory": {"enabled": false}}`).
Unknown keys are reported as warnings, never silently ignored; a bad value is an error naming
the key and what it accepts. Every key here is documented in docs/settings.md under its group
(`GROUPS`), with when a change applies (a test checks both).

A key marked `live` is read again each time it is used, so a change takes effect at once in a
running Keepmind; any other key is read when a part starts (the server, the models, the LLM
client) and applies at the next start. The file never holds a secret: the LLM's API key lives in
an environment variable that `memory.llm.api_key_env` names.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from .errors import InvalidInput, SettingsError
from .policy import check_boundaries, check_name
from .private import write_private
from .secretfilter import kinds_in_words, secret_kinds

FILE_NAME = "keepmind.json"


@dataclass(frozen=True)
class Key:
    name: str
    default: Any
    doc: str
    check: Callable[[Any], Any]  # returns the normalized value or raises ValueError(allowed)
    live: bool = False  # True: a running Keepmind applies a change at once; False: at the next start


# How docs/settings.md and the settings page group the keys: the longest prefix decides.
GROUPS = (
    ("memory.enabled", "Memory"),
    ("memory.recall", "Recall"),
    ("memory.embeddings", "Models and embeddings"),
    ("memory.models_dir", "Models and embeddings"),
    ("memory.curation", "Curation and review"),
    ("memory.llm", "Curation LLM"),
    ("session", "Sessions"),
    ("server", "Server"),
    ("policy", "Policy"),
    ("mcp", "MCP"),
    ("tray", "Tray"),
)
OTHER_GROUP = "Other"


def group_of(name: str) -> str:
    """The group a key is documented and shown under."""
    best, title = -1, OTHER_GROUP
    for prefix, heading in GROUPS:
        if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
            best, title = len(prefix), heading
    return title


def group_titles() -> list[str]:
    return list(dict.fromkeys(title for _, title in GROUPS))


def _bool(v):
    if isinstance(v, bool):
        return v
    raise ValueError("true or false")


def _opt_bool(v):
    return None if v is None else _bool(v)


def _int(lo=None, hi=None):
    def check(v):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(_range("a whole number", lo, hi))
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ValueError(_range("a whole number", lo, hi))
        return v
    return check


def _num(lo=None, hi=None, optional=False):
    def check(v):
        if v is None and optional:
            return None
        # NaN compares false with every bound, so it would pass them; infinity is no setting either
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(_range("a number", lo, hi) + (" or null" if optional else ""))
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ValueError(_range("a number", lo, hi) + (" or null" if optional else ""))
        return float(v)
    return check


def _range(what, lo, hi):
    if lo is not None and hi is not None:
        return f"{what} from {lo} to {hi}"
    if lo is not None:
        return f"{what} >= {lo}"
    return what


def _opt_str(v):
    if v is None or (isinstance(v, str) and v.strip()):
        return v
    raise ValueError("a non-empty string or null")


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _opt_env_name(v):
    """None, or a name an environment variable can have: a key pasted here (a walk saved
    "plainkey-Zebra-991" to keepmind.json) is no such name, and is refused."""
    if v is None or (isinstance(v, str) and _ENV_NAME.fullmatch(v.strip())):
        return v.strip() if isinstance(v, str) else v
    raise ValueError("the name of an environment variable (letters, digits and _, not first a digit), like "
                     "OPENAI_API_KEY, or null; never the key itself")


def _opt_http_url(v):
    """None, or an http(s) address with a host: the provider the user configured (loopback and
    private hosts are fine: this is a local app). Refused now rather than as curation failures
    after the next start."""
    allowed = ("an http:// or https:// address with a host name or IP address, like http://127.0.0.1:11434/v1 "
               "(no spaces, no user name or password, no ?query or #fragment), or null")
    if v is None:
        return None
    if not isinstance(v, str) or not v.strip() or any(c.isspace() for c in v.strip()):
        raise ValueError(allowed)
    url = v.strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number from 0 to 65535
    except ValueError:
        raise ValueError(allowed) from None
    if (parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.username is not None
            or parts.password is not None or parts.query or parts.fragment or "?" in url or "#" in url):
        raise ValueError(allowed)
    return url


def _one_of(*values: str, said: str):
    """A check for one of a few fixed words; its `choices` let a form offer them (a select)."""
    def check(v):
        if v in values:
            return v
        raise ValueError(said)
    check.choices = values
    return check


_audience = _one_of("personal", "team", "public", said="personal, team or public")
_recall_ranking = _one_of("hybrid", "fused", "cosine", "bm25", said="one of hybrid, fused, cosine, bm25")


def _boundary_map(v):
    allowed = 'an object mapping a boundary to a list of boundaries it may also read, e.g. {"work": ["work-shared"]}'
    if not isinstance(v, dict) or not all(
        isinstance(k, str) and isinstance(b, list) and all(isinstance(x, str) for x in b)
        for k, b in v.items()
    ):
        raise ValueError(allowed)
    try:
        return {check_name(k): list(check_boundaries(b)) for k, b in v.items()}
    except InvalidInput as exc:
        raise ValueError(f"{allowed}; {exc.message}") from None


def _boundary(v):
    try:
        return check_name(v)
    except InvalidInput as exc:
        raise ValueError(f"a boundary name ({exc.message})") from None


KEYS: list[Key] = [
    Key("memory.enabled", True,
        "The deployment gate. false: recall returns nothing, the memory tools refuse, and no session "
        "is observed, for every audience.", _bool, live=True),
    Key("memory.recall.timeout_ms", 300,
        "The whole recall budget per turn, in milliseconds.", _int(50, 10_000), live=True),
    Key("memory.recall.embed_budget_ms", 150,
        "Sub-budget for embedding the query, in milliseconds.", _int(10, 10_000), live=True),
    Key("memory.recall.gate_budget_ms", 120,
        "Ceiling for the relevance gate, in milliseconds (it also gets no more than what is left "
        "of the whole budget).", _int(10, 10_000), live=True),
    Key("memory.recall.max_items", 3,
        "At most this many memories are injected per turn (also the gate's batch size).", _int(1, 10), live=True),
    Key("memory.recall.max_injected_chars", 2000,
        "Character budget of the injected [memory-recall] block's items; whole items only.",
        _int(200, 20_000), live=True),
    Key("memory.recall.vector_weight", 0.7,
        "Weight of cosine similarity in the fused score.", _num(0.0, 1.0), live=True),
    Key("memory.recall.lexical_weight", 0.3,
        "Weight of the squashed lexical score in the fused score.", _num(0.0, 1.0), live=True),
    Key("memory.recall.min_cosine", None,
        "Override of the embedding model's calibrated cosine floor; null uses the manifest's value "
        "(an override is reported as such by doctor and in receipts).", _num(-1.0, 1.0, optional=True)),
    Key("memory.recall.recency_half_life_days", 30,
        "Half-life of the recency factor 0.85 + 0.15 * 2^(-age/half-life).", _num(1.0, 3650.0), live=True),
    Key("memory.recall.gate.enabled", None,
        "Relevance gate on/off; null: on, with the cross-encoder loaded only when "
        "memory.embeddings.enabled (recall without a query vector uses the lexical gate); false: "
        "the floor's output is injected.", _opt_bool),
    Key("memory.recall.gate.threshold", None,
        "Override of the gate's calibrated threshold; null uses the calibrated value.",
        _num(0.0, 1.0, optional=True)),
    Key("memory.recall.ranking", "hybrid",
        "Candidate ranking: hybrid (the fused score, then how much of the message each memory covers; the "
        "best of these in Keepmind's recall tests), fused (0.7 x similarity of meaning + 0.3 x matching "
        "words), cosine (similarity of meaning alone) or bm25 (matching words alone).", _recall_ranking, live=True),
    Key("memory.recall.receipt_retention_days", 14,
        "Recall receipts (recall_events) older than this are pruned.", _int(1, 3650), live=True),
    Key("memory.embeddings.enabled", True,
        "Local embeddings for hybrid recall and curation nomination. false: recall is lexical-only.",
        _bool),
    Key("memory.embeddings.model_id", None,
        "Active embedding model id; null picks the first verified of the defaults "
        "(snowflake-arctic-embed-m-int8, then all-minilm-l6-v2).", _opt_str),
    Key("memory.embeddings.auto_download", True,
        "Download a missing default model from the Hugging Face hub at its pinned revision. "
        "false: verify only, never touch the network.", _bool),
    Key("memory.models_dir", None,
        "Folder holding the model files (one sub-folder per model id); null: models/ in the data dir.",
        _opt_str),
    Key("memory.curation.nominator_threshold", 0.86,
        "Cosine at or above which an existing memory is nominated as a possible duplicate.",
        _num(0.0, 1.0), live=True),
    Key("memory.curation.nominator_k", 5,
        "At most this many nominees per proposal.", _int(1, 20), live=True),
    Key("memory.curation.max_attempts", 5,
        "A checkpoint that fails this many times is dead-lettered (kept, retryable).", _int(1, 50), live=True),
    Key("memory.curation.tombstone_cosine", 0.9,
        "A proposal this similar (cosine, with the local embedder) to a memory a person deleted as "
        "wrong is refused like an exact match (reason tombstone).", _num(0.5, 1.0), live=True),
    Key("memory.curation.lease_seconds", 120,
        "How long a worker's lease on a checkpoint lasts before it returns to the queue.",
        _int(5, 3600), live=True),
    Key("memory.curation.review", False,
        "Review before keeping: proposals the observer distils from conversations wait in the review queue "
        "(the Review page) until a person keeps, edits or rejects each; a rejected claim is not proposed "
        "again. An agent's explicit store_memory never waits.", _bool, live=True),
    Key("memory.llm.base_url", None,
        "OpenAI-compatible chat-completions base URL (e.g. http://127.0.0.1:11434/v1 for Ollama); "
        "null: no LLM, the rule-based extractor and conservative curation are used.", _opt_http_url),
    Key("memory.llm.model", None, "Model name sent to the provider.", _opt_str),
    Key("memory.llm.api_key_env", None,
        "Name of the environment variable holding the provider's API key (never the key itself).",
        _opt_env_name),
    Key("memory.llm.timeout_seconds", 60,
        "Timeout of one curation or observer LLM call, in seconds.", _int(5, 900)),
    Key("memory.llm.max_output_tokens", 4096,
        "Output token cap for LLM calls (reasoning models need room).", _int(256, 65_536)),
    Key("session.observer_idle_seconds", 90,
        "Distil a session after it has been idle this long (minimum 10).", _int(10, 86_400), live=True),
    Key("session.distill_every_turns", 5,
        "Distil after every N completed turns; 0 disables the turn trigger.", _int(0, 1000), live=True),
    Key("session.idle_timeout_minutes", 30,
        "A session idle this long is passivated (distilled one last time).", _int(1, 10_080), live=True),
    Key("server.port", 8765, "Port of the localhost API and UI (127.0.0.1 only).", _int(0, 65_535)),
    Key("server.max_body_bytes", 1_048_576, "Largest request body the API accepts, in bytes.",
        _int(1024, 64 * 1024 * 1024)),
    Key("server.max_upload_bytes", 1_073_741_824,
        "Largest file the browser UI accepts on its upload pages (model files, imports), in bytes; every "
        "other request keeps server.max_body_bytes.", _int(1_048_576, 16 * 1024 ** 3)),
    Key("policy.cross_boundary_reads", {},
        "Explicit cross-boundary reads: a boundary maps to the other boundaries its sessions may "
        "also read. Empty: every session reads its own boundary only.", _boundary_map, live=True),
    Key("mcp.audience", "personal",
        "Audience of the session `keepmind mcp` opens (personal, team or public); --audience overrides.",
        _audience),
    Key("mcp.boundary", "default",
        "Boundary of the session `keepmind mcp` opens; --boundary overrides.", _boundary),
    Key("mcp.server_idle_minutes", 30,
        "A Keepmind that `keepmind mcp` started in the background stops itself after this many minutes "
        "without a request (and with nothing left to curate or distil); the next tool call starts it "
        "again. 0: it runs until `keepmind stop`.", _int(0, 10_080)),
    Key("tray.status_seconds", 5,
        "How often the tray reads memory status (healthy, degraded, paused) for its icon, in seconds.",
        _int(1, 3600)),
    Key("tray.doctor_seconds", 120,
        "How often the tray runs doctor (a new warning or error raises one notification), in seconds.",
        _int(10, 86_400)),
]
KEY_INDEX = {k.name: k for k in KEYS}


@dataclass(frozen=True)
class Settings:
    values: dict
    warnings: tuple[str, ...] = ()

    def __getitem__(self, name: str):
        return self.values[name]

    def get(self, name: str, default=None):
        return self.values.get(name, default)

    def with_overrides(self, **overrides) -> "Settings":
        """A copy with keys replaced (use dotted names with '.' written as '__')."""
        values = dict(self.values)
        for raw, v in overrides.items():
            name = raw.replace("__", ".")
            checked = validate({name: v}).values  # only this key: update() reset the earlier ones
            if name in checked:
                values[name] = checked[name]
        return Settings(values, self.warnings)


def defaults() -> Settings:
    return Settings({k.name: k.default for k in KEYS})


def _flatten(obj: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in obj.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and name not in KEY_INDEX:
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out


def _as_json(value) -> str:
    """A value as keepmind.json writes it (null, true, "text"), not as Python does (None, True)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def validate(raw: dict) -> Settings:
    if not isinstance(raw, dict):
        raise SettingsError("keepmind.json must hold a JSON object of settings")
    values = {k.name: k.default for k in KEYS}
    warnings = []
    problems: dict[str, str] = {}
    for name, value in _flatten(raw).items():
        key = KEY_INDEX.get(name)
        if key is None:
            warnings.append(f"unknown setting {name!r} is ignored (the Settings page lists every setting)")
            continue
        try:
            values[name] = key.check(value)
        except ValueError as exc:
            # a value refused as a variable name may be the key itself, pasted there: not said back
            shown = "not a variable name" if name == "memory.llm.api_key_env" else f"is {_as_json(value)}"
            problems[name] = f"setting {name!r} {shown}; allowed: {exc}"
    if problems:
        # every bad value is said, so one pass of fixes is enough
        raise SettingsError("; and ".join(problems.values()), problems)
    return Settings(values, tuple(warnings))


def load(path: Path) -> Settings:
    """Read and validate keepmind.json; a missing file means all defaults."""
    path = Path(path)
    if not path.exists():
        return defaults()
    try:
        raw = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path.name} is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    return validate(raw)


def read_raw(path: Path) -> dict:
    """keepmind.json as written (flat or nested, unknown keys kept); {} when there is none."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as exc:
        raise SettingsError(f"{path.name} is not valid JSON (line {exc.lineno}): {exc.msg}; fix it by hand "
                            "before changing settings here") from None
    if not isinstance(raw, dict):
        raise SettingsError(f"{path.name} must hold a JSON object of settings")
    return raw


def _places(raw: dict, name: str, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Where `name` is written in a (possibly nested) settings object, as key paths."""
    found = []
    for k, v in raw.items():
        here = (*prefix, k)
        dotted = ".".join(here)
        if dotted == name:
            found.append(here)
        elif isinstance(v, dict) and name.startswith(dotted + ".") and dotted not in KEY_INDEX:
            found += _places(v, name, here)
    return found


def _put(raw: dict, name: str, value) -> None:
    """Set `name` where the file already has it (dropping any second spelling), else nested under
    an existing section of the file, else as a flat dotted key."""
    places = _places(raw, name)
    for extra in places[1:]:
        parent = raw
        for k in extra[:-1]:
            parent = parent[k]
        del parent[extra[-1]]
    if places:
        target = places[0]
    else:
        parts = name.split(".")
        target = (name,)
        if isinstance(raw.get(parts[0]), dict):  # the file nests this section: keep its style
            target = tuple(parts)
    parent = raw
    for k in target[:-1]:
        parent = parent.setdefault(k, {})
    parent[target[-1]] = value


def refuse_secret_values(changes: dict) -> None:
    """keepmind.json never holds a secret: a value that looks like one is refused, naming the key."""
    for name, value in changes.items():
        texts = [value] if isinstance(value, str) else (
            [json.dumps(value)] if isinstance(value, (dict, list)) else [])
        kinds = [k for t in texts for k in secret_kinds(t)]
        if kinds:
            raise SettingsError(f"setting {name!r} holds secret-like content ({kinds_in_words(sorted(set(kinds)))}): "
                                "keepmind.json never holds a secret. Put an API key in an environment variable "
                                "and name that variable in memory.llm.api_key_env")


def save_changes(path: Path, changes: dict) -> Settings:
    """Validate `changes` together with the rest of the file, then write the file atomically,
    keeping every other key (and the unknown ones) as they were. The same errors as loading it."""
    unknown = [name for name in changes if name not in KEY_INDEX]
    if unknown:
        raise SettingsError(f"unknown setting {unknown[0]!r}: the Settings page lists every setting")
    refuse_secret_values(changes)
    raw = read_raw(path)
    for name, value in changes.items():
        _put(raw, name, value)
    checked = validate(raw)
    write_private(Path(path), json.dumps(raw, indent=2, ensure_ascii=False) + "\n")
    return checked


def save(path: Path, settings: Settings) -> None:
    """Write the non-default values (flat keys), atomically."""
    changed = {k.name: settings.values[k.name] for k in KEYS if settings.values[k.name] != k.default}
    write_private(Path(path), json.dumps(changed, indent=2, sort_keys=True) + "\n")
