"""Recall planning: the lexical terms, content stems and anchor hints of a message.

Deterministic and pure. Generic conversational words ("ok", "can", "that", "remember",
"tell me") are dropped before anything is searched: netclaw's recall was poisoned by them
(netclaw-facts §10, #669/#693) because every memory matches "that".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..stance import asks_for_help
from .stem import stem

MAX_TERMS = 12
# Anchor hints a plan keeps (the message's first, then the recent turns'): a pasted list of names
# gave a receipt 1,600 of them. The terms are ordered by every hint, kept or not.
MAX_ANCHORS = 24
MAX_SEGMENTS = 4      # sentences of a message recalled for on their own (a long prompt: the first ones)
MIN_SEGMENT_WORDS = 2  # content words a sentence needs to be a segment; shorter ones join the next
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
TOKEN_RE = re.compile(r"[^\W_][\w]*", re.UNICODE)
CAPITALIZED_RE = re.compile(r"\b([A-Z][\w]{2,})")

# Question and modal words, determiners, auxiliaries, pronouns, imperative lead-ins, conjunctions,
# prepositions, fillers and chat noise. Kept short of topic words on purpose: "work", "home",
# "family" carry topics in a personal memory and stay searchable.
CONVERSATIONAL_STOPWORDS = frozenset("""
a about above after again against all also am an and any anybody anyone anything are aren around
as at be because been before being below between both but by can cannot could couldn did didn do
does doesn doing don done down during each either else enough etc even ever every everybody
everyone everything few for from further get gets getting give given go goes going gone got gotta
had hadn has hasn have haven having he her here hers herself hey hi him himself his how however
i if in into is isn it its itself just kind kinda know knows let lets like likely ll made make
makes many may me might mine more most much must my myself need needs no nor not nothing now of
off often ok okay on once one only or other others our ours ourselves out over own perhaps please
pretty quite rather re really recall recalls remember remind said say says see seem seems shall
she should shouldn since so some somebody someone something sometimes sort still such sure take
tell than thank thanks that the their theirs them themselves then there these they thing things
think this those though through thus to too try uh um under until up upon us use used very via
want wants was wasn way we well were weren what whatever when whenever where whether which while
who whoever whom whose why will with within without won would wouldn yeah yes yet you your yours
yourself yourselves s t d m ve
""".split())

# Words that can be capitalized at the start of a sentence without naming anything.
_NOT_ANCHORS = CONVERSATIONAL_STOPWORDS | frozenset("""
also anyway btw hello hey hmm okay please so sorry thanks well yes
""".split()) | frozenset(
    # the verb a request opens with, capitalized because it opens it ("Suggest a family dinner for
    # tonight." listed "suggest" among the message's names on the receipts page)
    """add arrange book buy check choose clone compare configure cook create design draft explain find fix give
    help list make open order organise organize pick plan prepare recommend refactor remind rent reserve schedule
    send show suggest summarise summarize teach tell translate update write""".split())


@dataclass(frozen=True)
class RecallPlan:
    """What recall searches for: FTS terms, stemmed content and anchor hints.

    A message of several sentences that each carry content ("What coffee should I get this
    afternoon? Also, I just adopted a greyhound named Pixel.") also has one plan per sentence in
    `parts`: each is embedded and searched on its own, and a candidate is judged against the part
    it matches best (segment 1..n; 0 is the whole message), so one topic does not drown the other.
    """

    query: str
    terms: tuple[str, ...]        # lowercase words for the FTS5 query (anchors first, then longest)
    content: tuple[str, ...]      # distinct stems of the message's content words (coverage)
    anchors: tuple[str, ...]      # lowercase capitalized names from the message and recent turns
    task: bool = False            # the message asks for something to be done or recommended
    parts: tuple["RecallPlan", ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    @property
    def segments(self) -> tuple[str, ...]:
        """The texts recall embeds: the whole message, then each part."""
        return (self.query, *(p.query for p in self.parts))

    def part(self, segment: int) -> "RecallPlan":
        """The plan of segment `segment` (0: the whole message)."""
        return self.parts[segment - 1] if 0 < segment <= len(self.parts) else self


def tokens(text: str) -> list[str]:
    """Lowercase word tokens; possessives and contractions split at the apostrophe."""
    return [t.lower() for t in TOKEN_RE.findall((text or "").replace("’", "'"))]


def content_words(text: str) -> list[str]:
    """Tokens that carry topic: conversational stopwords and one-letter tokens dropped."""
    return [t for t in tokens(text) if t not in CONVERSATIONAL_STOPWORDS and len(t) > 1]


def content_stems(text: str) -> list[str]:
    """Distinct stems of the content words, in order of first appearance."""
    # dict keys keep insertion order: linear in the words (a list's `in` made a long message quadratic).
    return list(dict.fromkeys(stem(w) for w in dict.fromkeys(content_words(text))))


def anchor_hints(text: str) -> list[str]:
    """Capitalized words of three or more letters that are not sentence-initial filler."""
    return list(_anchor_hints(text))


def _anchor_hints(text: str) -> dict[str, None]:
    """anchor_hints as the keys of a dict (in order of first appearance), for membership tests."""
    lows = dict.fromkeys(word.lower() for word in CAPITALIZED_RE.findall(text or ""))
    return {low: None for low in lows if low not in _NOT_ANCHORS}


def segments(message: str) -> list[str]:
    """The sentences of a message that carry content on their own, or [] when there is one.

    A sentence with fewer than MIN_SEGMENT_WORDS content words ("Thanks!", "Also:") joins the next
    one (the last joins the one before); at most MAX_SEGMENTS are kept.
    """
    out: list[str] = []
    pending = ""
    for sentence in SENTENCE_RE.split((message or "").strip()):
        sentence = f"{pending} {sentence}".strip() if pending else sentence.strip()
        if not sentence:
            continue
        if len(set(content_words(sentence))) < MIN_SEGMENT_WORDS:
            pending = sentence
            continue
        out.append(sentence)
        pending = ""
    if pending and out:
        out[-1] = f"{out[-1]} {pending}"
    return out[:MAX_SEGMENTS] if len(out) > 1 else []


def plan(message: str, context: list[str] | tuple[str, ...] = (), *, parts: bool = True) -> RecallPlan:
    """Plan a recall for `message`; `context` (recent turns) contributes anchor hints only.

    Context terms are not searched: a memory about the previous topic is not evidence for
    this message, and the embedding sees only the message. `parts`: also plan each sentence of a
    message of several (segments) to be recalled for on its own.
    """
    # The recent turns' hints are worked out once, not again for every part.
    hints: dict[str, None] = {}
    for turn in context or ():
        hints.update(_anchor_hints(turn))
    whole = _plan(message, hints)
    parts = tuple(_plan(s, hints) for s in segments(message)) if parts else ()
    return RecallPlan(whole.query, whole.terms, whole.content, whole.anchors, whole.task, parts)


def _plan(message: str, context_hints: dict[str, None]) -> RecallPlan:
    # Linear in the words: dicts (insertion-ordered) for the distinct words and the anchors. The
    # message's own hints come first, then the recent turns' in their order (dict.update keeps the
    # position of a hint already there), as the list version of this had them.
    anchors = _anchor_hints(message)
    anchors.update(context_hints)
    distinct = list(dict.fromkeys(content_words(message)))
    first = [w for w in distinct if w in anchors]
    # Longest first; sorted() is stable, so words of one length keep their order in the message.
    rest = sorted((w for w in distinct if w not in anchors), key=lambda w: -len(w))
    terms = (first + rest)[:MAX_TERMS]
    content = tuple(dict.fromkeys(stem(w) for w in distinct))  # content_stems(message), words read once
    return RecallPlan(query=message, terms=tuple(terms), content=content,
                      anchors=tuple(anchors)[:MAX_ANCHORS], task=asks_for_help(message))
