"""Graph facts without an LLM: the people, places, organisations and memberships a statement names.

The rule-based extractor finds a statement worth keeping; this module reads what it says about
the graph, from cue phrases that say what a name is, not from a list of names: "my sister Anna"
(Anna is a person, the user's sister), "lives in Lisbon" / "moved to Porto" (a place one lives
in), "work at Acme" (an organisation one works at), "a United MileagePlus member" (a
membership), "my home airport is SFO", "a dog named Pixel", "I met Sara", "went to Paris". Names are runs of
capitalized words (or an all-caps code)
right after the cue; a sentence-initial capital is never a name on its own.

Each relation says which anchor it starts from (the user, or the person the statement is about)
and whether a new value replaces the old one: `lives_in`, `works_at` and `home_airport` are
exclusive, so "Anna moved to Porto." closes Anna's `lives_in Lisbon` edge and opens a new one
(store.assert_edge keeps the old interval); `sister`, `member_of`, `knows` or `visited` are not
(two sisters, two programmes, many places).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

USER = "User"  # the anchor of the person whose statements these are (anchors are per scope)

# A name: capitalized words (joined by "of", "de", "and", "&", "-"), or a code like SFO; no
# leading article.
_NAME = (r"((?:[A-Z][\w'&.-]*|[A-Z]{2,})"
         # never joining a pronoun or the user: "Porto and User's brother", "LIS and I fly"
         r"(?:\s+(?:of|de|del|da|do|du|la|le|van|von|and|&|upon)?\s*"
         r"(?!(?:I|User|We|My|Our|He|She|They|You|It)\b)(?:[A-Z][\w'&.-]*|[A-Z]{2,}))*)")
# Whose a role is: the speaker's, or the user's as an agent writes it ("The user's dentist is Dr. Silva.").
_WHOSE = r"(?:[Mm]y|User's|[Tt]he\s+user's)"
# A word that may stand between "my" and a role: "my older sister", not "my password manager".
_ROLE_WORD = r"(?:(?:new|old|former|current|older|younger|little|big|eldest|oldest|youngest|twin|ex|late|dear)\s+)"
# What follows "my boss is" that names no one: "My boss is French."
_NOT_A_NAME = (r"(?:French|English|Spanish|German|Italian|Dutch|Swiss|Irish|Scottish|Welsh|British|American|Canadian|"
               r"Mexican|Brazilian|Portuguese|Japanese|Chinese|Korean|Indian|Russian|Polish|Greek|Turkish|Swedish|"
               r"Danish|Norwegian|Finnish|Australian|African|European|Asian|Catholic|Jewish|Muslim|Christian|Buddhist|"
               r"Hindu|Vegan|Vegetarian)")
# Social and family roles: "my sister Anna", "Anna is my sister". The role names the edge.
ROLES = ("sister", "brother", "wife", "husband", "partner", "girlfriend", "boyfriend", "fiance", "fiancee",
         "son", "daughter", "mother", "mom", "mum", "father", "dad", "grandmother", "grandma", "grandfather",
         "grandpa", "aunt", "uncle", "cousin", "niece", "nephew", "friend", "best friend", "roommate",
         "flatmate", "neighbor", "neighbour", "boss", "manager", "colleague", "coworker", "co-worker",
         "mentor", "coach", "teacher", "doctor", "dentist", "therapist", "landlord", "stepmother",
         "stepfather", "stepson", "stepdaughter", "kid", "child", "baby")
ROLE = "(?:" + "|".join(sorted((re.escape(r) for r in ROLES), key=len, reverse=True)) + ")"
# A subject: the user, someone unnamed by role ("my sister lives in Porto"), or a name.
_SUBJECT = (rf"(?:(?P<kin>\b[Mm]y\s+(?:(?:older|younger|big|little|eldest|oldest|youngest|twin|best|new|old)\s+)?"
            rf"(?P<kin_role>{ROLE}))(?!\s*,?\s+[A-Z])|(?P<self>\b(?:I|I'm|I've|we|We|We're|we're|My|my)\b)"
            rf"|(?P<who>{_NAME}))")
PETS = (r"(?:dog|puppy|pup|cat|kitten|pet|horse|pony|bird|parrot|rabbit|bunny|hamster|guinea pig|turtle|"
         r"tortoise|snake|lizard|fish)")

EXCLUSIVE = frozenset({"lives_in", "works_at", "home_airport", "from"})


@dataclass(frozen=True)
class Entity:
    name: str
    kind: str      # person | place | organisation | membership | pet


@dataclass(frozen=True)
class GraphFact:
    """One edge a statement asserts: `source relation target`."""

    source: Entity
    relation: str
    target: Entity

    @property
    def exclusive(self) -> bool:
        return self.relation in EXCLUSIVE


_PATTERNS: list[tuple[str, re.Pattern]] = [(name, re.compile(p)) for name, p in [
    # my sister Anna / my best friend Tom
    ("role", rf"\b{_WHOSE}\s+{_ROLE_WORD}?(?P<role>{ROLE})(?:'s\s+name\s+is|,)?\s+(?P<name>{_NAME})"),
    # "My new manager is Carla Mendes.", "My dentist is Dr. Silva." (a name right after "is")
    ("role", rf"\b{_WHOSE}\s+{_ROLE_WORD}?(?P<role>{ROLE})(?:\s+(?:at|from)\s+{_NAME})?\s+is\s+(?:now\s+)?"
             rf"(?!{_NOT_A_NAME}\b)"
             rf"(?P<name>{_NAME})(?=\s*(?:[.,!;]|$|\s+(?:in|at|on|near|off|by|from|and|who|since)\b))"),
    # Anna is my sister
    ("role_of", rf"(?P<name>{_NAME})\s+(?:is|was)\s+my\s+{_ROLE_WORD}?(?P<role>{ROLE})\b"),
    # someone else's: "Priya's brother Arjun works at Google." (Arjun was no one's brother)
    ("role_theirs", rf"(?<![\w'])(?P<owner>(?-i:[A-Z][a-z]+))'s\s+{_ROLE_WORD}?(?P<role>{ROLE})(?:,)?\s+"
                    rf"(?P<name>{_NAME})"),
    # a dog named Pixel, my cat Milo, adopted a rescue greyhound named Pixel
    ("pet", rf"\b(?:[Mm]y|[Oo]ur|an?|another)\s+(?:[\w-]+\s+){{0,2}}?(?P<animal>{PETS})\s+(?:named|called)\s+"
            rf"(?P<name>{_NAME})"),
    # "we got a puppy, a cocker spaniel called Biscuit" (a breed is no pet word)
    ("pet", rf"\b(?:[Mm]y|[Oo]ur|an?|another)\s+(?:[\w-]+\s+){{0,2}}?(?P<animal>{PETS}),\s+(?:an?|the)\s+"
            rf"(?:[\w-]+\s+){{1,3}}?(?:named|called)\s+(?P<name>{_NAME})"),
    ("pet", rf"\b(?:adopted|rescued|got|bought)\s+(?:my\s+|our\s+|an?\s+)(?:[\w-]+\s+){{0,2}}?(?:named|called)\s+"
            rf"(?P<name>{_NAME})"),
    # my dog is a beagle named Rolo
    ("pet", rf"\b(?:[Mm]y|[Oo]ur)\s+(?P<animal>{PETS})\s+is\s+an?\s+(?:[\w-]+\s+){{0,2}}?(?:named|called)\s+"
            rf"(?P<name>{_NAME})"),
    # my hamster is called Biscuit / my cat's name is Luna
    ("pet", rf"\b(?:[Mm]y|[Oo]ur)\s+(?P<animal>{PETS})(?:'s\s+name\s+is|\s+is\s+(?:named|called))\s+(?P<name>{_NAME})"),
    ("pet_my", rf"\b(?:[Mm]y|[Oo]ur)\s+{_ROLE_WORD}?(?P<animal>{PETS})\s+(?P<name>{_NAME})"),
    # "Oscar, my guinea pig."
    ("pet_my", rf"(?<![\w'])(?!(?:Hi|Hey|Hello|Thanks|Thank|Yes|Yeah|Yup|No|Oh|Wow|Sorry|Well|Sure|Okay|OK|Meet|Say)\b)"
               rf"(?P<name>{_NAME}),\s+(?:[Mm]y|[Oo]ur)\s+{_ROLE_WORD}?(?:[\w-]+\s+)?(?P<animal>{PETS})"
               r"(?=\s*(?:[.!?;)]|$))"),
    # I'm married to Sam / we're engaged to… (the user's spouse or fiancé, named)
    ("married", rf"\b(?:I|I'm|We|We're|we're)(?:\s+am|\s+are)?\s+(?:happily\s+)?(?P<bond>married|engaged)\s+to\s+"
                rf"(?P<name>{_NAME})"),
    # someone named David; I met Sara
    ("knows", rf"\b(?:someone|somebody|an?\s+(?:[\w-]+\s+){{0,2}}?(?:guy|man|woman|girl|boy|lady|person|kid|friend|"
              rf"veteran|neighbou?r|coach|teacher|doctor|mentor|artist|musician|colleague|student))\s+(?:named|called)\s+"
              rf"(?P<name>{_NAME})"),
    ("knows", r"(?:^|[.!?,]\s+|\band\s+)(?P<name>[A-Z][a-z]+)\s+and\s+I\b"),
    ("knows", rf"\b(?:I|we)\s+(?:\w+ly\s+|just\s+|finally\s+|also\s+)*met\s+(?:up\s+with\s+)?(?P<name>{_NAME})"),
    # "I met this amazing woman, Jean, who had been through a lot"
    ("knows", rf"\b(?:I|we)\s+(?:\w+ly\s+|just\s+|finally\s+|also\s+)*met\s+(?:this|that|a|an)\s+(?:[\w-]+\s+){{0,2}}?"
              rf"(?:guy|man|woman|girl|boy|lady|person|kid|couple|veteran|artist|musician|student),\s+"
              rf"(?P<name>{_NAME})\s*(?:,|\.|!|$)"),
    # places the user has been: went to / got back from / visited / been to Paris
    ("visited", rf"\b(?:[Mm]y|[Oo]ur)\s+(?:[\w-]+\s+)?trips?\s+to\s+(?:the\s+)?(?P<place>{_NAME})"),
    # a trip taken, not planned: "took a short trip last week to Rome", "went on a road trip to
    # Oregon", "a picture from a vacation in Florida" ("I'm planning a trip to Lisbon" is no visit)
    ("visited", rf"\b(?:[Tt]ook|had|went\s+on|from|during|after|back\s+from)\s+(?:an?|the|that|this|my|our)\s+"
                rf"(?:[\w-]+\s+){{0,2}}?(?:trip|vacation|holiday|getaway)\s+(?:(?!(?:next|in\s+\d)\b)\w+\s+){{0,2}}?"
                rf"(?:to|in)\s+(?:the\s+)?(?P<place>{_NAME})"),
    # a photo taken there: "took this pic in Spain"
    ("visited", rf"\b(?:[Tt]ook|snapped|shot)\s+(?:this|that|the|a|these|those)\s+(?:pic|pics|picture|pictures|photo|"
                rf"photos|shot|selfie)\s+(?:\w+\s+){{0,2}}?in\s+(?:the\s+)?(?P<place>{_NAME})"),
    # "I was in Chicago, it was awesome!", "I went to a place in London"
    ("visited", rf"\b(?:I|[Ww]e)\s+(?:was|were)\s+(?:just\s+|also\s+|once\s+)?in\s+(?:the\s+)?(?P<place>{_NAME})"
                r"(?=\s*(?:[.,!;]|$|\s+(?:last|this|for|on|in|at|back|when|during|over|\d{4})\b))"),
    ("visited", rf"\b(?:I|[Ww]e)(?:'ve|\s+have)?\s+(?:\w+ly\s+|also\s+|once\s+)*(?:went|been|travel(?:l)?ed)\s+to\s+"
                rf"(?:an?|the|this|that)\s+(?:[\w-]+\s+){{1,3}}?in\s+(?:the\s+)?(?P<place>{_NAME})"),
    ("visited", rf"\b(?:an?|the)\s+(?:[\w-]+\s+){{0,2}}?(?:location|town|city|village|place|spot|park|lake|beach|"
                rf"island|country|restaurant|cafe|café|bar|shop|store|museum|trail|mountain|resort|campground|venue)\s+"
                rf"(?:called|named)\s+(?P<place>{_NAME})"),
    ("visited", rf"\b(?:I|we|We)(?:'ve|\s+have)?\s+(?:\w+ly\s+|just\s+|finally\s+|also\s+|once\s+)*"
                rf"(?:went|travel(?:l)?ed|flew|drove|"
                rf"headed|got\s+back|came\s+back|returned|visited|been|explored|toured)\s+(?:back\s+)?"
                rf"(?:to\s+|from\s+|in\s+)?(?:the\s+)?(?P<place>{_NAME})"),
    # (I | Anna) live(s) in / moved to / relocated to / am based in Lisbon
    ("lives_in", rf"{_SUBJECT}(?:'m|'re|'s)?\s+(?:\w+ly\s+|just\s+|now\s+|still\s+)*(?:live|lives|lived|living|"
                 rf"moved|move|moving|relocated|relocating|am\s+based|is\s+based|are\s+based|based)\s+"
                 rf"(?:back\s+)?(?:in|to|near)\s+(?P<place>{_NAME})"),
    ("from", rf"{_SUBJECT}(?:\s+(?:am|is|are|was|were)|'m|'re|'s)\s+(?:originally\s+)?from\s+(?P<place>{_NAME})"),
    ("from", rf"{_SUBJECT}\s+(?:grew\s+up|was\s+born|were\s+born)\s+in\s+(?P<place>{_NAME})"),
    # "my grandma in my home country, Sweden", "my hometown is Tampa"
    ("home_country", rf"\b[Mm]y\s+(?:home\s*(?:country|town|city)|native\s+country)(?:,|\s+is|\s+of)\s+"
                     rf"(?P<place>{_NAME})"),
    # (I | Anna) work(s) at / for Acme; I'm a nurse at Mass General; joined Acme as
    ("works_at", rf"{_SUBJECT}\s+(?:\w+ly\s+|now\s+|still\s+)*(?:work|works|worked|working|am\s+working|'m\s+working|"
                 rf"is\s+working)\s+(?:as\s+an?\s+[\w\s-]{{1,40}}?\s+)?(?:at|for)\s+(?:the\s+)?(?P<org>{_NAME})"),
    ("works_at", rf"{_SUBJECT}\s+(?:am|'m|is|are|'re)\s+an?\s+(?:[\w-]+\s+){{0,3}}?(?:at|for|with)\s+(?:the\s+)?"
                 rf"(?P<org>{_NAME})"),
    # a United MileagePlus member / Gold member of X / member of the Sierra Club / joined the Y
    ("member_program", rf"\b(?:am|'m|are|'re|is)\s+(?:an?\s+)?(?:proud\s+|long-time\s+|lifetime\s+)?(?P<org>{_NAME})"
                       rf"(?:\s+(?:Gold|Silver|Platinum|Diamond|Premier|Elite|Medallion|Plus))*\s+"
                       rf"(?:member|subscriber|cardholder)\b"),
    ("member_program", rf"\bhave\s+(?P<org>{_NAME})\s+(?:status|membership|elite)\b"),
    ("member_of", rf"\b(?:member|members|part)\s+of\s+(?:the\s+|a\s+)?(?P<org>{_NAME})"),
    # joined Northwind Labs as a platform engineer (a job: "joined the Sierra Club as a member" is not)
    ("works_at", rf"{_SUBJECT}\s+(?:\w+ly\s+|just\s+|now\s+|finally\s+)*(?:[\w\s]{{0,30}}?\band\s+)?"
                 rf"(?:joined|started\s+at)\s+(?:the\s+)?(?P<org>{_NAME})\s+as\s+(?:an?\s+|the\s+|their\s+|its\s+)"
                 r"(?!(?:\w+\s+)?(?:member|volunteer|guest|donor|supporter|fan|subscriber|customer|patient|student)\b)"),
    ("member_of", rf"\b(?:joined|belong\s+to|signed\s+up\s+for|signed\s+with|volunteer\s+(?:at|with|for))\s+(?:the\s+)?"
                  rf"(?P<org>{_NAME})"),
    ("works_at", rf"{_SUBJECT}\s+(?:\w+ly\s+|just\s+|finally\s+)*(?:got|landed|started|have|had)"
                 rf"\s+(?:a\s+|an\s+|my\s+)?"
                 rf"(?:new\s+)?(?:job|internship|position|role)\s+(?:at|with)\s+(?:the\s+)?(?P<org>{_NAME})"),
    # my home airport is SFO / SFO is my home airport / I fly out of Boston Logan
    ("home_airport", rf"\b[Mm]y\s+home\s+airport\s+is\s+(?P<place>{_NAME})"),
    ("home_airport", rf"(?P<place>{_NAME})(?:\s+\([A-Z]{{3}}\))?\s*(?:,\s*(?:it's|it\s+is|which\s+is)|\s+is)"
                     r"\s+my\s+home\s+airport"),
    ("home_airport", rf"\bI\s+(?:\w+ly\s+)*fly\s+(?:out\s+of|from)\s+(?P<place>{_NAME})"),
]]
# Capitalized words that start a clause or name a month or a day: never a name alone.
_NOT_NAMES = frozenset("""
I I'm I've I'd I'll My We We're Our The A An This That It It's He She They You Your His Her Their Also And But So
Then When While If Yes No Oh Well Just Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February
March April May June July August September October November December Today Tomorrow Yesterday Mom Dad
""".split())


_HONORIFIC = re.compile(r"(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sir|Dame|St|Fr|Rev)\.?")


def _clean(name: str) -> str | None:
    name = re.sub(r"[.,;:!?'’]+$", "", (name or "").strip())
    name = re.sub(r"'s$", "", name)
    words = name.split()
    while words and words[0] in _NOT_NAMES:
        words = words[1:]
    while words and words[-1].lower() in ("of", "de", "and", "&", "on", "upon"):
        words = words[:-1]
    if not words or (len(words) == 1 and _HONORIFIC.fullmatch(words[0])):
        return None  # "Dr" of "My dentist is Dr. Ruiz <em>…" is no one's name
    name = " ".join(words)
    return name if len(name) >= 2 else None


# A name put right: "My sister's name is Ana, not Anna.", "Actually it's spelled Ana, not Anna." (a
# naming word first: "I live in Madrid, not Porto" moves the user, it renames nothing).
_RENAMED = re.compile(r"\b(?i:name\s+is|named|called|spelled|spelt|it's|it\s+is|its)\s+(?i:actually\s+|really\s+)?"
                      rf"(?P<new>{_NAME}),?\s+not\s+(?P<old>{_NAME})\b")


def renamed(text: str) -> tuple[str, str] | None:
    """(old name, new name) when a statement puts a name right, else None."""
    m = _RENAMED.search((text or "").replace("\u2019", "'"))
    if not m:
        return None
    old, new = _clean(m.group("old")), _clean(m.group("new"))
    return (old, new) if old and new and old != new and old not in (USER, "I") else None


def kin(role: str, subject: str = USER) -> str:
    """The anchor of someone known only by their role to the user: "User's sister". Curation ties it
    to the one person the user has already named in that role, when there is exactly one
    (curation.resolve_kin: "my sister lives in Porto" moves Anna, the user's sister)."""
    return f"{subject}'s {role}"


def introduced_by_tie(text: str, relation: str, name: str) -> bool:
    """Whether `text` names `name` after the tie, as one introduces someone ("my friend Marta",
    "User's colleague Marta"), rather than saying what the tie is ("Marta is my best friend")."""
    role = r"[\s_-]+".join(re.escape(w) for w in re.split(r"[_\s-]+", relation))
    return re.search(rf"\b{_WHOSE}\s+{_ROLE_WORD}?{role}(?:'s\s+name\s+is|,)?\s+{re.escape(name)}\b",
                     text) is not None


def _role(text: str) -> str:
    return text.lower().replace(" ", "_").replace("-", "_")


def _subject(m: re.Match) -> Entity | None:
    if m.groupdict().get("kin"):
        return Entity(kin(_role(m.group("kin_role"))), "person")
    if m.groupdict().get("self"):
        return Entity(USER, "person")
    who = _clean(m.group("who") or "") if m.groupdict().get("who") is not None else None
    return Entity(who, "person") if who else None


# Where one sentence ends and the next begins (after . ! or ?, but not a title's "Dr."), or a line break.
SENTENCE_BREAK = re.compile(r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!Mrs\.)(?<!\bvs\.)(?<=[.!?])\s+|\n+")


def graph_facts(text: str) -> list[GraphFact]:
    """The edges a text asserts, sentence by sentence, in the order found (duplicates dropped). A
    memory's whole body is read so too: read at once, "My sister Anna lives in Lisbon. Anna moved to
    Porto." gave Anna a home named "Lisbon. Anna" and no move."""
    out: list[GraphFact] = []
    for sentence in SENTENCE_BREAK.split((text or "").replace("’", "'")):
        for kind, pattern in _PATTERNS:
            for m in pattern.finditer(sentence):
                fact = _fact(kind, m)
                if fact is None:
                    continue
                # "my sister lives in Porto": the sister is the user's, whoever she is
                role_of = fact.source.name[len(USER) + 3:] if fact.source.name.startswith(USER + "'s ") else None
                for f in ([GraphFact(Entity(USER, "person"), role_of, fact.source)] if role_of else []) + [fact]:
                    if f not in out:
                        out.append(f)
    # a job one joined is not also a membership ("joined Northwind Labs as a platform engineer")
    # (nor, when someone else joined it, the user's: "Anna joined Stripe as their CFO")
    jobs = {f.target.name for f in out if f.relation == "works_at"}
    return [f for f in out if not (f.relation == "member_of" and f.target.name in jobs)]


def _fact(kind: str, m: re.Match) -> GraphFact | None:
    user = Entity(USER, "person")
    groups = m.groupdict()
    if kind in ("role", "role_of", "role_theirs"):
        name = _clean(groups["name"])
        role = _role(groups["role"])
        owner = _clean(groups["owner"]) if kind == "role_theirs" else USER
        if kind == "role_theirs" and (owner in (None, USER) or owner in _NOT_NAMES):
            return None
        return GraphFact(Entity(owner, "person"), role, Entity(name, "person")) if name else None
    if kind in ("pet", "pet_my"):
        name = _clean(groups["name"])
        return GraphFact(user, "pet", Entity(name, "pet")) if name else None
    if kind == "married":
        name = _clean(groups["name"])
        return GraphFact(user, "spouse" if groups["bond"] == "married" else "fiance", Entity(name, "person")) \
            if name else None
    if kind == "knows":
        name = _clean(groups["name"])
        return GraphFact(user, "knows", Entity(name, "person")) if name else None
    if kind == "visited":
        place = _clean(groups["place"])
        return GraphFact(user, "visited", Entity(place, "place")) if place else None
    if kind in ("lives_in", "from"):
        source, place = _subject(m), _clean(groups["place"])
        return GraphFact(source, kind, Entity(place, "place")) if source and place else None
    if kind == "works_at":
        source, org = _subject(m), _clean(groups["org"])
        return GraphFact(source, "works_at", Entity(org, "organisation")) if source and org else None
    if kind in ("member_program", "member_of"):
        org = _clean(groups["org"])
        return GraphFact(user, "member_of", Entity(org, "membership" if kind == "member_program" else "organisation")) \
            if org else None
    if kind == "home_country":
        place = _clean(groups["place"])
        return GraphFact(user, "from", Entity(place, "place")) if place else None
    if kind == "home_airport":
        place = _clean(groups["place"])
        return GraphFact(user, "home_airport", Entity(place, "place")) if place else None
    return None


def main_entity(facts: list[GraphFact]) -> Entity | None:
    """The entity a statement is about, to hang its memory on: the first named target that is not
    the user (the person in "my sister Anna lives in Lisbon"), else a named source."""
    for f in facts:
        if f.source.name != USER and f.source.kind == "person":
            return f.source
    for f in facts:
        if f.target.name != USER:
            return f.target
    return None
