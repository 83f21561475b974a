"""The rule-based extractor: first-person statements worth remembering, when no LLM is configured.

netclaw's retired rules turned any "Subject verb object" sentence into a "Project Fact: <fragment>"
and produced 95% waste. These rules look only at what a speaker says about themselves, one
sentence at a time, and only for the kinds of fact that stay true: preferences, memberships, home
places, work, decisions, completed milestones, people in their life, their projects and plans.
Questions, hypotheticals, greetings and chatter are skipped. A matched sentence becomes a
third-person statement about the speaker ("I'm a Delta SkyMiles member" -> "User is a Delta
SkyMiles member"), so it still reads right when recalled weeks later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .proposals import Proposal

_SENTENCE = re.compile(r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!Mrs\.)(?<!\bvs\.)(?<=[.!?])\s+|\n+")
_FIRST_PERSON = r"(?:i|i'm|i've|i'd|i'll|im|ive|we|we're|we've|my|our)"

# (category, memory class, confidence, pattern over the lowercased sentence)
_RULES: list[tuple[str, str, float, re.Pattern]] = [(c, k, p, re.compile(r, re.I)) for c, k, p, r in [
    ("preference", "durable_fact", 0.8,
     r"\b(?:i|we)\s+(?:really\s+|absolutely\s+|much\s+|always\s+|usually\s+)?"
     r"(?:prefer|love|like|enjoy|adore|hate|dislike|can't stand|cannot stand|avoid|am into|'m into)\b"),
    ("preference", "durable_fact", 0.8, r"\bmy\s+(?:favou?rite|go-to|preferred)\s+\w+"),
    ("preference", "durable_fact", 0.75,
     r"\bi(?:'m| am)\s+(?:a\s+)?(?:big\s+)?(?:fan of|passionate about|vegetarian|vegan|allergic)"),
    ("membership", "durable_fact", 0.85,
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:a\s+|an\s+)?(?:\w+\s+){0,4}?(?:member|members|subscriber|volunteer)\b"),
    ("membership", "durable_fact", 0.85,
     r"\b(?:i|we)\s+(?:just\s+)?(?:joined|belong to|signed up for|volunteer (?:at|with|for))\b"),
    ("membership", "durable_fact", 0.8, r"\bi\s+have\s+(?:\w+\s+){0,3}(?:status|membership|elite)\b"),
    ("home", "durable_fact", 0.85,
     r"\b(?:i|we)\s+(?:live|lived|grew up|was born|were born|moved|am based|'m based|are based)"
     r"\s+(?:in|to|at|near|out of)\b"),
    ("home", "durable_fact", 0.85, r"\b(?:i|we)(?:'m| am| are)\s+from\b"),
    ("home", "durable_fact", 0.85, r"\bmy\s+(?:home(?:town)?|home (?:airport|city|town|base)|hometown)\b"),
    ("home", "durable_fact", 0.8, r"\bi\s+(?:usually\s+|always\s+)?fly\s+(?:out of|from)\b"),
    ("work", "durable_fact", 0.8,
     r"\bi\s+(?:work|worked|am working|'m working)\s+(?:as|at|for|in)\b|\bi(?:'m| am)\s+an?\s+(?:\w+\s+){0,2}"
     r"(?:engineer|developer|teacher|nurse|doctor|designer|manager|artist|writer|student|lawyer|"
     r"counselor|dancer|chef|musician|photographer|scientist|consultant|owner|founder|instructor)\b"),
    ("decision", "durable_fact", 0.8,
     r"\b(?:i|we)(?:'ve| have)?\s+(?:finally\s+)?(?:decided|chose|chosen|picked|settled on|went with|"
     r"are going with|'re going with|will go with)\b"),
    ("milestone", "durable_fact", 0.75,
     r"\b(?:i|we)(?:'ve| have)?\s+(?:just\s+|finally\s+|recently\s+|successfully\s+)?"
     r"(?:finished|completed|launched|graduated|published|shipped|released|won(?!')|opened|bought|adopted|"
     r"passed|got (?:promoted|married|engaged|accepted|hired|a new)|started (?:a|my|our|the)|"
     r"signed|landed|built|ran|painted|wrote|created|received|became)\b"),
    ("person", "durable_fact", 0.75,
     r"\bmy\s+(?:wife|husband|partner|girlfriend|boyfriend|son|daughter|kids?|children|mom|mother|dad|"
     r"father|sister|brother|friend|best friend|boss|manager|colleague|dog|cat|pet|grandma|grandpa|family)\b"
     r"(?:'s\s+name)?\s+(?:\w+\s+)?(?:is|are|was|has|have|loves|likes|works|lives|just|turned|got)\b"),
    ("person", "durable_fact", 0.75, r"(?-i:\b[A-Z][a-z]+)\s+(?:is|was)\s+my\s+(?:\w+\s+)?(?:wife|husband|partner|"
     r"son|daughter|mom|mother|dad|father|sister|brother|friend|boss|manager|colleague|cousin|aunt|uncle|"
     r"neighbou?r|mentor|doctor|dentist|therapist|coach|landlord|roommate)\b"),
    ("person", "durable_fact", 0.75, r"\bi\s+have\s+(?:a|an|two|three|four|\d+)\s+(?:\w+\s+)?"
     r"(?:kids?|children|sons?|daughters?|dogs?|cats?|pets?|sisters?|brothers?)\b"),
    ("project", "durable_fact", 0.75,
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:currently\s+|now\s+)?(?:working on|building|writing|"
     r"developing|running|training for|learning|studying|researching)\b"),
    ("project", "durable_fact", 0.75, r"\b(?:my|our)\s+(?:project|app|company|startup|business|store|"
     r"studio|book|thesis|team|band|blog)\s+(?:\w+\s+)?(?:is|uses|has|needs|will|launched|just)\b"),
    ("plan", "evidence", 0.7,
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:planning|going|hoping|about|flying|traveling|travelling|"
     r"heading|moving)\s+(?:to|on)\b|\b(?:i|we)(?:'ve| have)\s+booked\b"),
    ("preference", "durable_fact", 0.75, r"\b(?:i|we)\s+(?:always|never|usually)\s+(?!been\b)\w+"),
    ("plan", "evidence", 0.7,
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:still\s+|now\s+|currently\s+)?(?:considering|looking (?:into|for)|"
     r"searching for|saving (?:up )?for|trying to|preparing for|getting ready for|thinking of)\b"),
    ("activity", "durable_fact", 0.7, r"\b(?:i|we)(?:'ve| have)\s+been\s+(?:\w+ly\s+)?(?!thinking|wondering|"
     r"meaning|feeling|going through)\w+ing\b"),
    ("possession", "durable_fact", 0.7, r"\b(?:i|we)(?:'ve| have)\s+got\b|\bi\s+(?:still\s+)?(?:have|own)\s+"
     r"(?:a|an|my|this|that|some|lots|two|three)\b"),
    ("event", "evidence", 0.65,
     r"\b(?:i|we)(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+|also\s+)?(?:went|been to|visited|attended|"
     r"made|took|tried|met|saw|joined|found|read|watched|played|gave|performed|volunteered|organized|"
     r"hosted|competed|traveled|travelled|taught|learned|started)\b"),
]]
_INTERJECTION = re.compile(
    r"^(?:(?:oh|ooh|yeah|yep|yes|wow|haha|hah|lol|hey|hi|hello|thanks|thank you|cool|great|awesome|aw+|"
    r"ah|omg|well|sure|ok|okay|so|totally|definitely|absolutely|exactly|true|nice)\b[\s,!.:;~-]*)+", re.I)
_SKIP = re.compile(
    r"^(?:if|when|would|could|should|maybe|perhaps|do you|did you|have you|are you|can you|what|why|"
    r"how|where|who|let me|let's|thanks|thank you|hey|hi|hello|wow|oh|haha|lol|sure|ok|okay)\b", re.I)
_HEDGE = re.compile(r"\b(?:might|maybe|perhaps|probably|wondering|not sure|thinking about whether|"
                    r"if i|would love to|wish)\b", re.I)
_MIN_WORDS, _MAX_WORDS = 4, 60
_THIRD = {  # first-person -> third-person rewrites (applied word by word)
    "i'm": "{s} is", "im": "{s} is", "i am": "{s} is", "i've": "{s} has", "ive": "{s} has",
    "i'd": "{s} would", "i'll": "{s} will", "i was": "{s} was", "i have": "{s} has", "i": "{s}",
    "me": "{s}", "my": "{p}", "mine": "{p}", "myself": "{s}",
    "we're": "{s} and others are", "we've": "{s} and others have", "we": "{s} and others",
    "our": "{p}", "ours": "{p}", "us": "{s} and others",
}
_ADVERBS = {"really", "absolutely", "always", "usually", "never", "also", "just", "still", "often",
            "much", "finally", "recently", "generally", "mostly", "definitely", "totally"}
_VERB_3RD = re.compile(r"^(?:(?:really|absolutely|always|usually|never|also|just|still|often|much)\s+)*(\w+)")
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "are": "is", "was": "was",
              "can't": "can't", "can": "can", "will": "will", "would": "would", "did": "did", "don't": "doesn't"}
_NO_CONJUGATE = re.compile(r"^(?:\w+ed|was|were|had|did|got|went|ran|won|grew|wrote|built|became|"
                           r"began|bought|made|took|saw|met|found|left|moved|chose|picked|joined|"
                           r"just|recently|finally|can|could|will|would|should|must|might)$")


@dataclass(frozen=True)
class Statement:
    turn: int
    text: str  # the original sentence
    fact: str  # rewritten in the third person
    category: str
    memory_class: str
    confidence: float


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text or "") if s and s.strip()]


def _conjugate(rest: str) -> str:
    """'love hiking' -> 'loves hiking' (the word after a rewritten bare 'I')."""
    m = _VERB_3RD.match(rest)
    if not m:
        return rest
    verb = m.group(1)
    low = verb.lower()
    if _NO_CONJUGATE.match(low):
        return rest
    if low in _IRREGULAR:
        new = _IRREGULAR[low]
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        new = verb + "es"
    elif low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        new = verb[:-1] + "ies"
    else:
        new = verb + "s"
    return rest[:m.start(1)] + new + rest[m.end(1):]


def third_person(sentence: str, subject: str) -> str:
    """Rewrite a first-person sentence as a statement about `subject`."""
    possessive = subject + "'" if subject.endswith("s") else subject + "'s"
    text = sentence.replace("’", "'").strip()
    out: list[str] = []
    tokens = re.split(r"(\s+)", text)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        low = re.sub(r"[^\w']", "", tok.lower())
        pair = (low + " " + re.sub(r"[^\w']", "", tokens[i + 2].lower())) if i + 2 < len(tokens) else None
        if pair in _THIRD:
            out.append(_THIRD[pair].format(s=subject, p=possessive) + tok[len(tok.rstrip(",.!?;:")):] * 0)
            i += 3
            continue
        if low in _THIRD and tok.strip():
            trail = tok[len(tok.rstrip(",.!?;:")):]
            out.append(_THIRD[low].format(s=subject, p=possessive) + trail)
            if low == "i":  # "I usually love" -> "User usually loves"
                j = i + 2
                while j < len(tokens) and tokens[j].lower() in _ADVERBS:
                    j += 2
                if j < len(tokens):
                    tokens[j] = _conjugate(tokens[j])
            i += 1
            continue
        out.append(tok)
        i += 1
    fact = "".join(out).strip()
    fact = fact[0].upper() + fact[1:] if fact else fact
    fact = re.sub(r"[!]+$", ".", fact)
    return fact if fact.endswith((".", "?")) else fact + "."


# A clause that opens with one of these leans on the clause before it ("I always fly out of
# Boston Logan, it's my home airport"): cut there, it would no longer say which airport.
_REFERS_BACK = re.compile(r"^(?:it|it's|its|that|that's|this|this is|which|there|they|they're|those|these)\b", re.I)


def _clause(sentence: str, start: int) -> str:
    """The clause holding the match: from the start of its clause to the end of the sentence.

    A clause that refers back to the one before it keeps the whole sentence.
    """
    head = sentence[:start]
    cut, width = -1, 0
    for sep in (", ", " - ", "; ", " but ", " and ", " so "):
        at = head.rfind(sep)
        if at > cut:
            cut, width = at, len(sep)
    if cut < 0 or start - cut >= 60:
        return sentence
    clause = sentence[cut + width:].lstrip(" ,-;")
    return sentence if _REFERS_BACK.match(clause) else clause


_TAIL = re.compile(r",\s+(?:so|but|and you|can you|could you|please|which means)\b|\s+-\s+|;\s+|\s+but\s+", re.I)


def _cut_tail(sentence: str, after: int) -> str:
    """Drop a trailing clause addressed to the listener ("..., so book Delta when you can")."""
    m = _TAIL.search(sentence, after)
    return sentence[:m.start()] if m else sentence


def statements(text: str, turn: int = 0, subject: str = "User") -> list[Statement]:
    """Every first-person statement of a lasting kind in one message."""
    found: list[Statement] = []
    for sentence in sentences(text):
        sentence = _INTERJECTION.sub("", sentence).strip()
        if sentence and sentence[0].islower():
            sentence = sentence[0].upper() + sentence[1:]
        words = sentence.split()
        if not (_MIN_WORDS <= len(words) <= _MAX_WORDS):
            continue
        if sentence.rstrip().endswith("?") or _SKIP.match(sentence) or _HEDGE.search(sentence):
            continue
        if not re.search(r"\b" + _FIRST_PERSON + r"\b", sentence, re.I):
            continue
        for category, memory_class, confidence, pattern in _RULES:
            m = pattern.search(sentence)
            if m:
                clause = _clause(_cut_tail(sentence, m.end()), m.start())
                fact = third_person(clause, subject)
                if len(_key_words(fact, subject)) < 3:
                    break  # "I love it!" names nothing worth keeping
                found.append(Statement(turn, sentence, fact, category, memory_class, confidence))
                break
    return found


def _key_words(fact: str, subject: str) -> list[str]:
    stop = {"is", "are", "was", "has", "a", "an", "the", "and", "of", "to", "in", "on", "for", "with",
            "at", "my", "her", "his", "their", "really", "just", "very", "so", subject.lower(),
            subject.lower() + "'s"}
    return [w for w in re.findall(r"[\w'-]+", fact) if w.lower() not in stop]


def extract(turns: list[tuple[int, str]], subject: str = "User", subject_kind: str = "user") -> list[Proposal]:
    """Proposals from (turn index, user text) pairs: one per statement, most confident first."""
    out: list[Proposal] = []
    seen: set[str] = set()
    for turn, text in turns:
        for st in statements(text, turn, subject):
            key = st.fact.lower()
            if key in seen:
                continue
            seen.add(key)
            words = _key_words(st.fact, subject)
            title = " ".join(words[:8]).strip(" .,") or st.category
            anchor = f"{subject} {st.category}: {' '.join(words[1:4]) or st.category}".lower()
            out.append(Proposal(
                memory_class=st.memory_class, title=title[:1].upper() + title[1:], content=st.fact,
                anchor=anchor, anchor_type=st.category, aliases=(" ".join(words[:3]),),
                facets=(st.category, subject_kind), confidence=st.confidence, subject_kind=subject_kind,
                subject=subject, recall_mode=None, turns=(turn,),
            ))
    out.sort(key=lambda p: -p.confidence)
    return out


# -- netclaw's retired rules, kept as the baseline the eval compares against ------------------

_NETCLAW_PREFIX = re.compile(r"^(?:i|well|going to|want to|if that|i'm|you|let me|maybe|just|so|anyway)\b", re.I)
_NETCLAW_FACT = re.compile(
    r"\b((?:[A-Z][\w-]*\s+){0,4}[A-Z][\w-]*|(?:[Oo]ur|[Tt]he)\s+(?:\w+\s+){0,3}\w+)\s+"
    r"(has|have|uses|use|supports|support|requires|require|needs|need|completed)\s+(.+)")
_NETCLAW_MILESTONE = re.compile(r"\bwe\s+(?:successfully\s+)?completed\s+(.+)", re.I)


def netclaw_baseline(text: str) -> list[str]:
    """netclaw's retired turn-complete rules (netclaw-facts §4), reimplemented for comparison."""
    out = []
    for sentence in sentences(text):
        m = _NETCLAW_MILESTONE.search(sentence)
        if m:
            out.append(f"Project Milestone: {m.group(1).strip()}")
            continue
        if _NETCLAW_PREFIX.match(sentence):
            continue
        m = _NETCLAW_FACT.search(sentence)
        if m:
            label = "Project Constraint" if m.group(2).startswith(("requir", "need")) else "Project Fact"
            out.append(f"{label}: {m.group(0).strip()}")
    return out
