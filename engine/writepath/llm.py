"""An OpenAI-compatible chat-completions client for the write path (observer and curator).

Works with Ollama, llama.cpp's server, LM Studio, vLLM and OpenAI: POST {base_url}/chat/completions
with model, messages, temperature and max_tokens, bearer key when one is given. The API key is
passed in by the composition root (which reads the environment variable the settings name);
engine code never reads the environment. Timeouts default to 60 s (netclaw's 10 s failed 46% of
calls) and every failure is logged with its kind and kept in `LlmHealth` for status and doctor.
Replies are cleaned of `<think>` blocks and code fences before anyone parses them.

What a failure leaves behind is kept apart by who may read it. `/status` is read by every token, so
its reason says what failed in words (the kind, an HTTP status, a remedy), never the text of the
reply or of the provider's error body: a reply can echo the prompt (memory text of any audience) and
a body can echo the API key. The log gets the detail, redacted and cut to a short excerpt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..secretfilter import MARKER, redact

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("keepmind.writepath.llm")
LOG_EXCERPT_CHARS = 120  # of a failure's own words in the log (log_words); never the provider's or the model's


class LlmError(Exception):
    """A call that produced no usable reply: kind is timeout, connect, http, empty or protocol.

    `lasting`: asking again will get the same answer (the provider refused the request itself: an
    unknown model, a bad key, a wrong address), so waiting to retry only delays the work."""

    def __init__(self, kind: str, message: str, *, lasting: bool = False):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.lasting = lasting


@dataclass(frozen=True)
class LlmConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0
    max_output_tokens: int = 4096


@dataclass(frozen=True)
class LlmReply:
    text: str  # cleaned: no <think> blocks, no code fences
    raw: str
    sha256: str  # of the raw reply, recorded with every decision
    model: str
    elapsed_ms: float


@dataclass(frozen=True)
class LlmHealth:
    calls: int
    failures: int
    consecutive_failures: int
    last_error: str | None
    last_error_at: int | None
    last_ok_at: int | None


def config_from_settings(settings, api_key: str | None) -> LlmConfig | None:
    """The provider configured in settings, or None (no LLM: rules and conservative curation)."""
    base_url = settings.get("memory.llm.base_url")
    model = settings.get("memory.llm.model")
    if not base_url or not model:
        return None
    return LlmConfig(base_url=base_url, model=model, api_key=api_key or None,
                     timeout_s=float(settings.get("memory.llm.timeout_seconds", 60)),
                     max_output_tokens=int(settings.get("memory.llm.max_output_tokens", 4096)))


def completions_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return base + "/chat/completions"


class ChatClient:
    """One provider; thread-safe; owns an httpx client (close() releases it)."""

    def __init__(self, config: LlmConfig, clock=None, transport: "httpx.BaseTransport | None" = None):
        import httpx  # here, not at import: 15 MB of resident memory a Keepmind without an LLM never uses

        self.config = config
        self._clock = clock
        headers = {"Content-Type": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        self._http = httpx.Client(timeout=httpx.Timeout(config.timeout_s, connect=min(10.0, config.timeout_s)),
                                  headers=headers, transport=transport, trust_env=False)
        self._lock = threading.Lock()
        self._calls = self._failures = self._consecutive = 0
        self._last_error: str | None = None
        self._last_error_at: int | None = None
        self._last_ok_at: int | None = None
        self._last_purpose: str | None = None
        self._last_words: str | None = None

    @property
    def model_id(self) -> str:
        return self.config.model

    def complete(self, system: str, user: str, *, purpose: str = "curation") -> LlmReply:
        """Ask once; raise LlmError (already recorded) when no usable reply came back."""
        body = {
            "model": self.config.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
            "max_tokens": self.config.max_output_tokens,
            "stream": False,
        }
        import httpx

        url = completions_url(self.config.base_url)
        try:
            resp = self._http.post(url, json=body)
        except httpx.TimeoutException as exc:
            raise self._fail(purpose, "timeout", f"no reply within {self.config.timeout_s:.0f} s ({exc})") from None
        except httpx.HTTPError as exc:
            raise self._fail(purpose, "connect", f"{type(exc).__name__}: {exc}") from None
        if resp.status_code >= 400:
            # a 4xx refuses the request as sent; 408 (timeout) and 429 (too many requests) pass
            lasting = 400 <= resp.status_code < 500 and resp.status_code not in (408, 429)
            raise self._fail(purpose, "http", f"HTTP {resp.status_code}: {excerpt(resp.text)}", lasting=lasting,
                             status_code=resp.status_code)
        try:
            data = resp.json()
            choice = data["choices"][0]
            raw = reply_content(choice["message"])
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            # Every unusable shape is a failed call, never an exception the caller does not expect:
            # the observer records a failed run (its back-off and fall-back to the rules apply) and
            # curation retries, instead of the same session being asked again every second.
            raise self._fail(purpose, "protocol", f"not a chat-completions reply ({exc}): "
                                                  f"{excerpt(resp.text)}") from None
        text = clean_reply(raw)
        if not text.strip():
            reason = "finish_reason=" + str(choice.get("finish_reason"))
            raise self._fail(purpose, "empty", f"the reply had no content ({reason}); "
                                               "a reasoning model may need more output tokens")
        with self._lock:
            self._calls += 1
            self._consecutive = 0
            self._last_ok_at = self._now()
        elapsed = resp.elapsed.total_seconds() * 1000 if resp.elapsed else 0.0
        log.info("memory_llm_reply purpose=%s model=%s chars=%d ms=%.0f", purpose, self.config.model,
                 len(raw), elapsed)
        return LlmReply(text, raw, sha256_text(raw), self.config.model, elapsed)

    def record_failure(self, purpose: str, kind: str, message: str) -> LlmError:
        """A reply that came back but could not be used (e.g. no JSON): counted like any failure."""
        return self._fail(purpose, kind, message, count_call=False)

    def health(self) -> LlmHealth:
        with self._lock:
            return LlmHealth(self._calls, self._failures, self._consecutive, self._last_error,
                             self._last_error_at, self._last_ok_at)

    def status_reasons(self) -> list[str]:
        """What failed, in words only: every token reads /status, whatever it may recall."""
        h = self.health()
        if h.consecutive_failures:
            # the observer and the curator call the same provider; say which one failed last
            who = "the observer's" if self._last_purpose == "observer" else "curation's"
            calls = "call" if h.consecutive_failures == 1 else f"{h.consecutive_failures} calls in a row"
            return [f"curation LLM failing (its last {calls} failed, counting the observer's and curation's, "
                    f"since the last success; the last was {who}): {self._last_words}"]
        return []

    def close(self) -> None:
        self._http.close()

    def _now(self) -> int | None:
        return self._clock() if self._clock else None

    def _fail(self, purpose: str, kind: str, message: str, count_call: bool = True,
              lasting: bool = False, status_code: int | None = None) -> LlmError:
        # `message` may quote the reply or the provider's body: it is redacted before it goes
        # anywhere, the log gets a short excerpt of it, and health and status get words only.
        message = redact(message)[0]
        key = self.config.api_key
        if key and len(key) >= 6:  # echoed by a provider ("Incorrect API key provided: …"), whatever it looks like
            message = message.replace(key, MARKER)
        words = failure_words(purpose, kind, status_code, self.config.timeout_s)
        with self._lock:
            self._calls += count_call
            self._failures += 1
            self._consecutive += 1
            self._last_error = f"{kind}: {words}"
            self._last_words = words
            self._last_error_at = self._now()
            self._last_purpose = purpose
        log.warning("memory_llm_error purpose=%s kind=%s model=%s %s", purpose, kind,
                    self.config.model, log_words(message))
        return LlmError(kind, message, lasting=lasting)


def reply_content(message) -> str:
    """The assistant text of a chat-completions `message`; TypeError when it holds none.

    `content` is a string, null (nothing said: an empty reply), or a list of parts of which the
    `text` ones are joined (the OpenAI content-part shape some servers answer with)."""
    if not isinstance(message, dict):
        raise TypeError(f"message is {type(message).__name__}, not an object")
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, dict) and part.get("type", "text") == "text"]
        if all(isinstance(t, str) for t in texts):
            return "".join(texts)
    raise TypeError(f"message content is {type(content).__name__} without text parts")


_HTTP_REMEDY = {401: "check the API key: memory.llm.api_key_env names its variable",
                403: "check the API key: memory.llm.api_key_env names its variable",
                404: "check memory.llm.model and memory.llm.base_url",
                408: "the provider timed out: check the server and memory.llm.timeout_seconds",
                429: "the provider is rate-limiting: it is retried later"}


def http_remedy(status_code: int) -> str:
    """What to check after the provider answered `status_code`: one table for status and doctor."""
    if status_code in _HTTP_REMEDY:
        return _HTTP_REMEDY[status_code]
    if status_code >= 500:
        return "the provider's server failed: check the server and memory.llm.timeout_seconds"
    return "the provider refused the request: check memory.llm.model, memory.llm.base_url and the API key"


def failure_words(purpose: str, kind: str, status_code: int | None, timeout_s: float) -> str:
    """A failure said for anyone to read: what went wrong and what to check, no quoted text."""
    if kind == "http" and status_code is not None:
        return f"HTTP {status_code} from the provider ({http_remedy(status_code)})"
    if kind == "timeout":
        return f"no reply within {timeout_s:.0f} s (check the server and memory.llm.timeout_seconds)"
    if kind == "connect":
        return "could not connect to the provider (check memory.llm.base_url and that the server runs)"
    if kind == "protocol":
        return "the reply was not a usable chat-completions reply (check memory.llm.base_url)"
    if kind == "empty":
        return ("the reply had no content (a reasoning model may need more output tokens: "
                "memory.llm.max_output_tokens)")
    if kind == "parse":
        return "the reply held no proposals" if purpose == "observer" else "the reply held no decision"
    return f"the call failed ({kind})"


# Where a failure's own words end and what it quotes begins (a reply, a provider's body).
_QUOTED = re.compile(r""":\s*[{\[\'"]|:\s*(?=\S{40})""")


def log_words(text: str) -> str:
    """A failure as the log keeps it: its own words ("curator LLM http: HTTP 500"), never the reply
    or the provider body it quotes, which may hold conversation or memory text that an erase for
    good cannot reach in a log file; how long the quote was, and a hash to match it with the
    checkpoint's error (which keeps a redacted excerpt)."""
    text = text or ""
    cut = _QUOTED.search(text)
    head = redact(text[:cut.start()] if cut else text)[0][:LOG_EXCERPT_CHARS]
    if cut is None:
        return head
    return f"{head} ({len(text) - cut.start()} characters quoted, not logged; sha256 {sha256_text(text)[:12]})"


def excerpt(text: str, limit: int = 200) -> str:
    """`text` redacted, then cut: redacting first, so a cut never leaves half a secret unrecognised."""
    clean = redact((text or "")[:limit * 5])[0]
    return clean if len(clean) <= limit else clean[:limit] + "…"


def sha256_text(text: str) -> str:
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()


_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.S)


def clean_reply(raw: str) -> str:
    """Drop reasoning blocks (closed, dangling, or a lone closing tag) and code fences."""
    text = _THINK.sub("", raw or "")
    lowered = text.lower()
    for closing in ("</think>", "</thinking>"):
        if closing in lowered:  # opening tag eaten by the server: keep what follows the last close
            text = text[lowered.rfind(closing) + len(closing):]
            lowered = text.lower()
    for opening in ("<think>", "<thinking>"):
        if opening in lowered:  # unterminated reasoning: everything after it is not the answer
            text = text[:lowered.find(opening)]
            lowered = text.lower()
    fenced = _FENCE.findall(text) if text.lstrip().startswith("```") else []
    if fenced:
        text = "\n".join(f.strip() for f in fenced)
    return text.strip()


def first_json_object(text: str):
    """The first balanced {...} in `text` that parses as JSON, or None."""
    text = text or ""
    start = text.find("{")
    while start != -1:
        depth, in_str, escape = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == '"':
                    in_str = False
                continue
            if ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        value = json.loads(text[start:i + 1])
                    except ValueError:
                        break
                    if isinstance(value, dict):
                        return value
                    break
        start = text.find("{", start + 1)
    return None
