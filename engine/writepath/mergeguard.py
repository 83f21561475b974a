"""The merge guard: a merged body must keep what its sources said, or the proposal is appended.

netclaw measured ~27% wrong merges on hard near-duplicates and 88 silent overwrites in 14 days
(netclaw-facts §4). So an LLM's merged body is accepted only when it keeps >= 95% of the sources'
load-bearing tokens (numbers, dates, URLs, versions, paths, identifiers, names) and is at least
60% as long as the longest source; otherwise the proposal goes on top of the existing body under
a dated separator and nothing is lost. Superseded values belong inline, as
"previously X, as of DATE", which keeps both tokens and so passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..clock import iso

MIN_RETENTION = 0.95
MIN_LENGTH_RATIO = 0.60

_MONTHS = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
           r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_PATTERNS = [
    r"https?://[^\s)>\]]+",                                     # URLs
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?\b",  # ISO dates
    r"\b\d{1,2}/\d{1,2}/\d{2,4}\b",                             # slash dates
    r"(?i)\b\d{1,2}(?:st|nd|rd|th)?\s+" + _MONTHS + r"\.?(?:,?\s+\d{4})?\b",  # 8 May 2023
    r"(?i)\b" + _MONTHS + r"\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?\b",  # May 8, 2023
    r"(?i)\b" + _MONTHS + r"\s+\d{4}\b",                        # May 2023
    r"\bv?\d+\.\d+(?:\.\d+){0,2}\b",                            # versions, decimals
    r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?",                             # money
    r"(?i)\b\d[\d,]*(?:\.\d+)?\s?(?:%|kg|g|mg|lb|lbs|km|mi|m|cm|mm|ms|s|h|min|gb|mb|kb|tb|usd|eur|gbp)\b",
    r"(?:~|\.{1,2})?/(?:[\w.\-]+/)+[\w.\-]*",                    # unix paths
    r"\b[A-Za-z]:\\[^\s]+",                                     # windows paths
    r"\b[a-z_][\w]*(?:\.[a-z_][\w]*){2,}\b",                    # dotted identifiers
    r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b",                           # camelCase
    r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b",                            # snake_case
    r"\b[a-z0-9]+(?:-[a-z0-9]+){1,}\b",                         # kebab-case
    r"\b[A-Z][A-Z0-9_]{2,}\b",                                  # ALL_CAPS, IATA-like codes
    r"\b\d+\b",                                                 # bare integers
]
_COMPILED = [re.compile(p) for p in _PATTERNS]
_CAPITALIZED = re.compile(r"\b[A-Z][a-z][\w'’\-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*[-*]?\s*)$")
_NOT_NAMES = frozenset(
    "the a an i i'm i've my we our it its this that these those he she they you your his her their "
    "and or but if when then also previously now as of since until on in at for to from with by "
    "is was are were be has have had not no yes".split()
)


@dataclass(frozen=True)
class GuardResult:
    passed: bool
    retention: float
    length_ratio: float
    missing: tuple[str, ...]
    reason: str


def load_bearing_tokens(text: str) -> set[str]:
    """Numbers, dates, URLs, versions, paths, identifiers and names in `text`, lowercased."""
    found: set[str] = set()
    for pattern in _COMPILED:
        for m in pattern.finditer(text or ""):
            token = m.group(0).strip().rstrip(".,;:")
            if token:
                found.add(token.lower())
    for m in _CAPITALIZED.finditer(text or ""):
        word = m.group(0).rstrip("'’-")
        if word.lower() in _NOT_NAMES:
            continue
        if _SENTENCE_START.search(text[:m.start()]):
            continue  # a capital at a sentence start says nothing about being a name
        found.add(word.lower())
    return found


# Words that carry no fact of their own (a merge may drop or reword them freely).
_LIGHT = frozenset("""
about above after again also always among another because been before being below between both
cannot could does doing down during each either even ever every from further have having here
into just more most much must never none only other over same should since some still such than
that their them then there these they this those through under until upon very were what when
where which while will with would your user user's previously earlier currently likes like
""".split())


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s", "ed", "ing"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[:-len(suffix)]
    return word


def content_words(text: str) -> set[str]:
    """The words of four or more letters that say something ("peanuts", "shellfish"), stemmed: a
    careless merge drops facts in plain lowercase words too ("allergic to peanuts and shellfish"
    merged into "allergic to penicillin and pollen" keeps every name and number)."""
    return {_stem(w) for w in re.findall(r"[a-z][a-z'’-]{3,}", (text or "").lower()) if w not in _LIGHT}


def _present(token: str, text_lower: str) -> bool:
    pattern = r"(?<![\w])" + re.escape(token) + r"(?![\w])"
    if re.search(pattern, text_lower):
        return True
    # tolerate reformatted whitespace inside a token ("8 May 2023" vs "8 may, 2023")
    squeezed = re.sub(r"[\s,]+", " ", token)
    return squeezed != token and squeezed in re.sub(r"[\s,]+", " ", text_lower)


# The curator prompt's own lines (curator.build_prompt): a "merge" that holds them is the prompt
# echoed back, which keeps every token of the sources and so would pass the token count.
_SCAFFOLD = re.compile(r"(?im)^\s*(?:PROPOSED|EXISTING CANDIDATES)\s*$|^\s*\[\d+\]\s+id=|^\s*(?:anchor|timestamp):\s"
                       r"|\b(?:doc|rec)-[0-9a-f]{32}\b")
MAX_GROWTH = 1.5  # a merged body longer than its sources together, by this much, adds what no one said


def check_merge(sources: list[str], merged: str, *, min_retention: float = MIN_RETENTION,
                min_length_ratio: float = MIN_LENGTH_RATIO) -> GuardResult:
    """Does `merged` keep what `sources` (existing bodies and the proposal) said, and only that?"""
    merged = merged or ""
    union: set[str] = set()
    for body in sources:
        union |= load_bearing_tokens(body)
    lowered = merged.lower()
    missing = sorted(t for t in union if not _present(t, lowered))
    retention = 1.0 if not union else (len(union) - len(missing)) / len(union)
    longest = max((len(s.strip()) for s in sources), default=0)
    length_ratio = 1.0 if longest == 0 else len(merged.strip()) / longest
    if retention < min_retention:
        return GuardResult(False, retention, length_ratio, tuple(missing),
                           f"merge dropped {len(missing)} load-bearing tokens ({retention:.0%} kept)")
    if length_ratio < min_length_ratio:
        return GuardResult(False, retention, length_ratio, tuple(missing),
                           f"merge is {length_ratio:.0%} of the longest source's length")
    words: set[str] = set()
    for body in sources:
        words |= content_words(body)
    dropped = sorted(words - content_words(merged))
    word_retention = 1.0 if not words else 1 - len(dropped) / len(words)
    # two dropped content words fail it however long the sources are ("allergic to chicken" vanished
    # from a long document at 90% kept); one reworded verb is no lost fact
    if len(dropped) >= 2:
        return GuardResult(False, retention, length_ratio, tuple(missing) + tuple(dropped),
                           f"merge dropped {len(dropped)} of its sources' {len(words)} content words "
                           f"({word_retention:.0%} kept)")
    echoed = [m.group(0).strip() for m in _SCAFFOLD.finditer(merged)
              if not any(m.group(0).strip().lower() in s.lower() for s in sources)]
    if echoed:
        return GuardResult(False, retention, length_ratio, tuple(missing),
                           f"merge holds the curator's prompt ({echoed[0][:40]!r}), not a merged body")
    together = sum(len(s.strip()) for s in sources)
    if together and len(merged.strip()) > MAX_GROWTH * together + 200:
        return GuardResult(False, retention, length_ratio, tuple(missing),
                           f"merge is {len(merged.strip()) / together:.1f} times its sources' length together")
    return GuardResult(True, retention, length_ratio, tuple(missing), "merge keeps its sources")


def unsaid(bodies: list[str], proposal: str) -> tuple[str, ...]:
    """What `proposal` holds that none of `bodies` does: its load-bearing tokens missing from them
    all (a curator's SKIP of "Terraform 1.10, state in tf-state-prod-eu" loses both)."""
    lowered = "\n".join(bodies).lower()
    return tuple(sorted(t for t in load_bearing_tokens(proposal) if not _present(t, lowered)))


def dated_separator(as_of_ms: int) -> str:
    """The line above a document's earlier text (stance.EARLIER reads it)."""
    return f"---\n_[earlier, as of {iso(as_of_ms)[:10]}]_"


def append_body(existing: str, proposal: str, existing_as_of_ms: int) -> str:
    """The structural append: the newest statement first, the earlier body kept under a dated
    separator (so a living document reads latest-first and nothing is overwritten)."""
    return f"{proposal.strip()}\n\n{dated_separator(existing_as_of_ms)}\n{existing.strip()}"


CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


# The user's words about themselves and the same fact about the user: an agent stores "My sister
# Anna lives in Lisbon.", the observer writes "User's sister Anna lives in Lisbon." (its possessive
# splits into "user s"), and one must be seen to say the other.
_SAID_BY_USER = {"my": "user s", "mine": "user s", "i": "user", "me": "user"}


# Words that only say how strongly (never negations or how often: "I never eat meat" is no "I eat meat").
_INTENSIFIERS = frozenset({"strongly", "really", "truly", "deeply", "absolutely", "definitely", "very", "totally",
                           "genuinely", "honestly", "particularly", "especially", "much"})


def contains_statement(body: str, proposal: str) -> bool:
    """True when `body` already says `proposal`: its words, in order, whole (case, punctuation and
    markup aside; "likes tea" is not said by "likes teapots"). Text in a script written without
    spaces (Chinese, Japanese) is compared without word boundaries."""
    norm = lambda s: " ".join(_SAID_BY_USER.get(w, w) for w in re.findall(r"\w+", s.lower()))  # noqa: E731
    p, b = norm(proposal), norm(body)
    if not p:
        return False
    if CJK_RE.search(p):
        return p.replace(" ", "") in b.replace(" ", "")
    if f" {p} " in f" {b} ":
        return True
    # "I prefer window seats when I fly." is said by "I strongly prefer window seats when I fly, and I
    # avoid red-eye flights.": the memory's intensifiers may stand between the words. Only the
    # memory's: a proposal with one says more than a memory without it, and is not contained.
    if _INTENSIFIERS.isdisjoint(p.split()):
        plain = " ".join(w for w in b.split() if w not in _INTENSIFIERS)
        return f" {p} " in f" {plain} "
    return False


def previously(current: str, earlier: str, as_of_ms: int) -> str:
    """The inline form for a superseded value: "CURRENT (previously EARLIER, as of DATE)"."""
    return f"{current.rstrip('. ')} (previously {earlier.strip().rstrip('.')}, as of {iso(as_of_ms)[:10]})."
