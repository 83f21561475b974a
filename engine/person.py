"""Third-person rewriting: a first-person statement as a statement about its speaker.

"I usually fly out of Boston Logan" becomes "User usually flies out of Boston Logan", so a memory
still reads right when it is recalled weeks later, in another session, to another agent. Pronouns
and contractions are replaced word by word; the verb after a bare "I" is conjugated, past any
adverbs ("I strongly prefer" -> "User strongly prefers", "I only read" -> "User only reads").
"""

from __future__ import annotations

import re

_THIRD = {  # first-person -> third-person rewrites (applied word by word)
    "i'm": "{s} is", "im": "{s} is", "i am": "{s} is", "i've": "{s} has", "ive": "{s} has",
    "i'd": "{s} would", "i'll": "{s} will", "i was": "{s} was", "i have": "{s} has", "i": "{s}",
    "me": "{s}", "my": "{p}", "mine": "{p}", "myself": "{s}",
    "we're": "{s} and others are", "we've": "{s} and others have", "we": "{s} and others",
    "our": "{g}", "ours": "{g}", "us": "{s} and others",
}
_ADVERBS = {"really", "absolutely", "always", "usually", "never", "also", "just", "still", "often",
            "much", "finally", "recently", "generally", "mostly", "definitely", "totally", "only", "even",
            "rarely", "seldom", "sometimes", "mainly", "truly", "deeply", "strongly", "firmly", "strictly",
            "exclusively", "simply", "actually", "personally", "typically", "normally", "especially",
            # "I now work", "I no longer live" ("User nows work" was kept), "I already paid"
            "now", "currently", "longer", "no", "already", "once", "ever", "barely", "hardly", "first"}
# Verbs that end like an adverb: never skipped as one.
_LY_VERBS = {"fly", "apply", "reply", "rely", "supply", "comply", "multiply", "ally", "bully", "tally", "rally"}


def is_adverb(word: str) -> bool:
    """An adverb the conjugation skips ("I strongly prefer"): a known one, or a -ly word that is
    not a verb ("fly", "rely")."""
    low = word.lower().strip(",.;:!?")
    return low in _ADVERBS or (low.endswith("ly") and len(low) >= 5 and low not in _LY_VERBS)


_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "am": "is", "are": "is", "was": "was",
              "can't": "can't", "can": "can", "will": "will", "would": "would", "did": "did", "don't": "doesn't",
              "haven't": "hasn't", "won't": "won't", "didn't": "didn't", "wasn't": "wasn't", "cannot": "cannot"}
# Verbs whose base form ends in "ed" (not a past): "I need" -> "User needs" ("User need" it read).
_ED_VERBS = ("need", "feed", "speed", "succeed", "proceed", "exceed", "bleed", "breed", "heed", "seed", "weed",
             "embed", "shed", "wed", "shred")
_NO_CONJUGATE = re.compile(r"^(?:(?!(?:" + "|".join(_ED_VERBS) + r")$)\w+ed|was|were|had|did|got|went|ran|won|grew|"
                           r"wrote|built|became|began|bought|made|took|saw|met|found|left|moved|chose|picked|joined|quit|"
                           # the past of irregular verbs: "I never said" ("User never saids" it read)
                           r"said|thought|told|knew|felt|kept|heard|paid|sold|sent|spent|lost|brought|caught|"
                           r"taught|fought|meant|slept|wore|drove|rode|flew|drew|threw|gave|ate|fell|forgot|"
                           r"held|hid|lent|lit|sat|stood|swam|sang|spoke|stole|understood|"
                           r"woke|broke|came|forgave|overslept|taken|given|been|done|gone|seen|known|"
                           r"just|recently|finally|can|could|will|would|should|must|might)$")

# Words ending in "s" that are not a verb agreeing with one subject ("miss", "focus", "this").
_S_OF_THE_WORD = ("ss", "us", "is")
_BASE = {"has": "have", "is": "are", "was": "were", "does": "do", "goes": "go", "doesn't": "don't",
         "isn't": "aren't", "hasn't": "haven't", "wasn't": "weren't"}


def base_form(rest: str) -> str:
    """'builds the frontend' -> 'build the frontend': the verb after a group said as one ("The team
    builds…") as after "we"; conjugate's inverse."""
    verb = rest.split(" ", 1)[0] if rest else ""
    low = verb.lower()
    if low in _BASE:
        new = _BASE[low]
    elif not re.fullmatch(r"[a-z]+s", low) or low.endswith(_S_OF_THE_WORD) or _NO_CONJUGATE.match(low):
        return rest
    elif low.endswith("ies") and len(low) > 4:
        new = verb[:-3] + "y"
    elif low.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        new = verb[:-2]
    else:
        new = verb[:-1]
    return new + rest[len(verb):]


def conjugate(rest: str) -> str:
    """'love hiking' -> 'loves hiking' (the word after a rewritten bare 'I')."""
    verb = rest.split(" ", 1)[0] if rest else ""
    low = verb.lower()
    if "'" in verb:  # a contraction is conjugated only when known ("don't" -> "doesn't")
        return _IRREGULAR.get(low, verb) + rest[len(verb):]
    if not re.fullmatch(r"\w+", verb):
        return rest
    if _NO_CONJUGATE.match(low):
        return rest
    if low in _IRREGULAR:
        new = _IRREGULAR[low]
    elif low.endswith("s") and not low.endswith(_S_OF_THE_WORD):
        new = verb  # said already agreeing ("We builds the API" read "The team buildses the API")
    elif low.endswith(("s", "sh", "ch", "x", "z", "o")):
        new = verb + "es"
    elif low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        new = verb[:-1] + "ies"
    else:
        new = verb + "s"
    return new + rest[len(verb):]


def third_person(sentence: str, subject: str, group: str | None = None) -> str:
    """Rewrite a first-person sentence as a statement about `subject`; "our" is `group`'s when it is
    given (a team's "Our database is Postgres 16." is not the speaker's database), else `subject`'s."""
    possessive = subject + "'" if subject.endswith("s") else subject + "'s"
    ours = possessive if group is None else (group + "'" if group.endswith("s") else group + "'s")
    text = sentence.replace("’", "'").strip()
    out: list[str] = []
    tokens = re.split(r"(\s+)", text)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        low = re.sub(r"[^\w']", "", tok.lower())
        pair = (low + " " + re.sub(r"[^\w']", "", tokens[i + 2].lower())) if i + 2 < len(tokens) else None
        if pair in _THIRD:
            out.append(_THIRD[pair].format(s=subject, p=possessive, g=ours) + tok[len(tok.rstrip(",.!?;:")):] * 0)
            i += 3
            continue
        if low in _THIRD and tok.strip():
            trail = tok[len(tok.rstrip(",.!?;:")):]
            out.append(_THIRD[low].format(s=subject, p=possessive, g=ours) + trail)
            # "I usually love" -> "User usually loves"; "my wife and I are" stays plural
            if low == "i" and not (i >= 2 and tokens[i - 2].lower() == "and"):
                j = i + 2
                while j < len(tokens) and is_adverb(tokens[j]):
                    j += 2
                if j < len(tokens):
                    tokens[j] = conjugate(tokens[j])
            i += 1
            continue
        out.append(tok)
        i += 1
    fact = "".join(out).strip()
    fact = fact[0].upper() + fact[1:] if fact else fact
    fact = re.sub(r"[!]+$", ".", fact)
    return fact if fact.endswith((".", "?")) else fact + "."


