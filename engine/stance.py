"""What a statement says about its subject's standing dispositions, and whether a message asks for help.

Shared by the write path (the rule-based extractor learns such statements) and recall (a task
message leans on them). Everything here is generic English: the verbs and nouns of preference,
aversion and refusal, of health conditions and of habit, and the forms a request takes ("can you",
"what should I", "recommend", an imperative). Nothing names a domain, so a statement about food,
travel, games or tools is recognized the same way, and no list of topics has to be kept.

- A *standing statement* says something that stays true of the user and bears on future tasks:
  a preference or dislike ("I strongly prefer...", "The user avoids..."), a constraint ("I can't
  eat...", "I refuse to..."), a condition ("allergic to peanuts"), a habit ("every Tuesday").
- A *lasting* memory is any that is not an episode dated to a day: every standing statement, and
  the facts of the user's life and world ("I use Neovim", "The user's manager is Katrin",
  "Monitoring is Prometheus and Grafana"). A task needs these as much as preferences: configuring
  an editor needs the editor, a message to the manager who the manager is.
- A *task message* asks the assistant to do or recommend something ("Book me a flight to Berlin",
  "What coffee should I get?"), as opposed to a question about the past ("When did I...?"). Such
  a message rarely shares words with the preferences it needs.
"""

from __future__ import annotations

import re

# Preference, aversion and refusal: verbs, their nouns and the idioms that carry them.
LIKING = (r"prefer(?:s|red|ring|ence|ences)?|likes?|liked|lov(?:e|es|ed)|enjoy(?:s|ed)?|ador(?:e|es|ed)|"
          r"fond|fan\s+of|into|passionate|keen\s+on|appreciat(?:e|es|ed)|favou?rites?|go-to|"
          r"thriv(?:e|es)|learns?\s+best|work(?:s)?\s+best|relax(?:es)?\s+best|swear(?:s)?\s+by|"
          r"believ(?:e|es)|value(?:s)?|insist(?:s)?|stick(?:s)?\s+to|only\s+(?:eat|drink|use|buy|read|watch|"
          r"wear|play|listen|fly|stay|take)s?")
DISLIKING = (r"dislik(?:e|es|ed)|hat(?:e|es|ed)|despis(?:e|es|ed)|detest(?:s|ed)?|loath(?:e|es|ed)|abhor(?:s|red)?|"
             r"can't\s+stand|cannot\s+stand|aversion|averse|disdain|distaste|"
             r"avoid(?:s|ed)?|refus(?:e|es|ed)|steer(?:s)?\s+clear|stay(?:s)?\s+away|shun(?:s)?|"
             r"(?:no|little|zero)\s+interest|not\s+(?:interested|into|a\s+fan|fond|keen)|"
             r"(?:don't|do\s+not|doesn't|does\s+not|never|won't|will\s+not|can't|cannot)\s+\w+|"
             r"uncomfortable|afraid|fear(?:s|ful)?|phobi[ac]|wary|opposed|against|tired\s+of|sick\s+of|"
             r"find(?:s)?\s+(?:\S+\s+){0,6}?\w+(?:ing|ive|ous|ful|less|ble|ic|al|y)\b|"
             r"exclusively|solely|strictly|only\s+\w+|minimi[sz]e|limit(?:s)?\s+my|cut(?:s)?\s+(?:back|down|out)")
CONDITION = (r"allerg(?:y|ies|ic)|intoleran(?:t|ce)|sensitiv(?:e|ity)|celiac|coeliac|diabet(?:es|ic)|"
             r"asthma(?:tic)?|vegetarian|vegan|pescatarian|kosher|halal|gluten-free|sober|pregnant|"
             r"diagnosed|condition|disorder|injur(?:y|ed)|disabilit(?:y|ies)|chronic|sufferer|suffer(?:s)?\s+from|"
             r"on\s+an?\s+[^.]{0,40}?\b(?:diet|regimen)|follow(?:s)?\s+an?\s+[^.]{0,40}?\b(?:diet|regimen|routine)|"
             r"adhere(?:s)?\s+to")
HABIT = (r"every\s+(?:day|morning|evening|night|week|weekend|month|year|summer|winter|"
         r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
         r"on\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends)|"
         r"daily|weekly|nightly|each\s+(?:day|morning|week)|usually|always|never|often|regularly|"
         r"habitually|routinely|whenever|most\s+(?:days|mornings|evenings|weekends)")

_STANCE = re.compile(rf"\b(?:{LIKING}|{DISLIKING}|{CONDITION}|{HABIT})\b", re.I)
# The statement is about the user: first person, or the user named as such.
_SELF = re.compile(r"\b(?:i|i'm|i've|i'd|im|my|me|myself|we|our|user|user's|the\s+user)\b", re.I)

# A sentence that opens with a verb and its object ("Configure my editor...", "Refactor this
# module...", "Summarize the article..."): an imperative, which is how most prompts to a coding
# agent begin, whatever the verb. Told by its form, not a list of verbs: a first word that is
# none of the words a statement or a question opens with (and not a past tense, a gerund or an
# adverb), then a determiner, a pronoun, a particle or a quotation.
_OPENERS = ("yesterday|today|tonight|tomorrow|then|also|so|now|here|there|maybe|perhaps|sometimes|usually|still|"
            "just|only|even|again|once|last|next|this|that|these|those|after|before|during|since|until|while|when|"
            "where|what|who|whom|whose|why|how|which|if|because|and|but|or|nor|yet|the|a|an|my|our|your|his|her|"
            "their|its|i|you|he|she|we|they|it|me|us|them|is|are|was|were|be|been|am|do|does|did|have|has|had|will|"
            "would|can|could|should|may|might|must|shall|in|on|at|for|with|about|from|by|of|to|into|over|under|"
            "like|as|not|no|all|some|every|each|both|thanks|thank|hi|hello|hey|ok|okay|yes|yeah|sure|well|oh|wow|"
            "please|sorry|good|great|nice|one|two|three")
_IMPERATIVE = (r"(?:^|[.!?;:]\s+|\n\s*)(?:(?:please|now|ok|okay|also|then|so|great|thanks|good|nice|cool|perfect|"
               r"alright|right|next)[,!.]?\s+)*"
               rf"(?!(?:{_OPENERS})\b)[a-z][a-z-]*(?<!ed)(?<!ing)(?<!ly)"
               r"\s+(?:(?:me|my|the|a|an|this|that|these|those|our|us|it|them|some|all|every|each|any|its|up|out|"
               r"down|through|why|how|whether)\b|['\"`])")

# The forms of a request: asking for a recommendation or an action, not about the past. Words
# such as "advice" or "recommend" count only addressed to the assistant or for the speaker ("What
# advice did Anna give?" asks about the past), or in a fragment that opens a sentence other than
# as a question does ("Dinner ideas for tonight?", "Any tips for jet lag?").
_TASK = re.compile(r"""
    \b(?:recommend\w*|suggest\w*|ideas?|tips|advice|advise|options|alternatives)\b
        (?=.*\b(?:you|me|my|i)\b)
  | (?:^|[.!?]\s+)(?!(?:what|which|who|whose|when|where|why|how|did|does|do|is|are|was|were|has|have|had|according|
        based)\b)(?:[\w'-]+\s+){0,3}(?:ideas|tips|suggestions|recommendations|options)\b
  | \b(?:help|remind)\s+me\b
  | (?:^|[.!?]\s+)\s*(?:please\s+)?(?:book|find|plan|help|give|show|list|create|write|make|draft|organi[sz]e|prepare|
        choose|pick|get|buy|order|schedule|arrange|design|cook|teach|explain|compare|recommend|suggest|
        reserve|rent|fix|set\s+up|put\s+together|come\s+up\s+with|tell\s+me|send|add)\b
  | \b(?:can|could|would|will)\s+you\b
  | \b(?:should|could|can|shall|might)\s+i\b
  | \bwhat(?:'s|\s+is|\s+are|\s+would\s+be)\s+(?:some|a\s+good|good|the\s+best|the\s+right|a\s+few|any)\b
  | \b(?:are\s+there|is\s+there)\s+any\b
  | \bbest\s+(?:way|ways|place|places|option|options|time)\b
  | \bhow\s+(?:do|can|should|could|might)\s+i\b | \bhow\s+to\b
  | \bi(?:'m|\s+am)\s+(?:looking|planning|thinking|considering|trying|hoping|going|searching|interested|
        about\s+to|in\s+the\s+market)\b
  | \bi\s+(?:need|want|would\s+like|wanna|plan)\b | \bi'd\s+like\b | \blet's\b
  | """ + _IMPERATIVE, re.I | re.X)


# A statement anchored to a day ("On 25 May 2023, ...", "yesterday", "last week") tells what
# happened then: an episode, whose stance words ("appreciated the offer", "loves the pizza they
# made") describe the moment, not a disposition that bears on the user's next task.
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
          r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
# A day of a month, said either way round ("3 June", "the 5th of March", "June 3rd"): the write
# path's rules read it too.
DAY = rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?)\b"
_DATED = re.compile(rf"\b{DAY}|\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b(?:yesterday|last\s+(?:night|week|weekend|month|year))\b",
                    re.I)

# A day that comes round again or is still ahead: a birthday, an anniversary, a due date, an
# expiry ("her birthday is 12 June", "the MOT is due on 14 August", "the passport expires on 3
# March"). What it says stays true until that day, so it is lasting, not an episode.
_RECURRING = re.compile(rf"\b(?:birthdays?|anniversary|due|deadline|expires?|expiry|renewal|renews)\b"
                        rf"(?:\s+(?:is|are|falls|on|by|in|date|:))*\s+{DAY}", re.I)

# Every dated form has a digit, "yesterday" or "last": a text without one is not searched further
# (the date pattern took 5 us a memory, most of what recall spends telling standing statements).
_MAYBE_DATED = re.compile(r"\d|yesterday|last", re.I)


# A standing instruction to the assistant: "Never use semicolons in my JavaScript.", "Please don't
# suggest restaurants that only serve steak.", "From now on, answer in Portuguese." It says how every
# later task is to be done, as a preference does, though it names no stance of the speaker. Its verb
# is one of doing a task for someone (using, writing, suggesting, booking, answering): "Never give
# up!" and "Always here to help." are said to a friend. A plain "don't" counts only with a verb of
# advising or writing: "Don't book the 6 am flight" is for one task.
_TASK_VERB = (r"(?:use|write|suggest|recommend|offer|propose|include|add|put|mention|show|send|call|assume|answer|"
              r"reply|respond|format|book|schedule|keep|ask|cc|sign|name|spell|round|convert|translate|explain|"
              r"list|order|pick|choose|plan|cook|serve|address|refer|remind|check|run|test|commit|push|deploy|"
              r"merge|document|comment|quote|cite|summari[sz]e|respond|reply|start|end|open|close|leave|put|set|"
              r"make|give\s+me|tell\s+me|bring|avoid|double-check|prefer|default|"
              # what is done to code: "Never edit the generated files.", "Always pin versions."
              r"edit|touch|modify|change|delete|remove|rename|import|install|upgrade|pin|bump|print|log|mock|"
              r"hard-?code|expose|catch|raise|rebase|squash|force-push|amend|skip|disable|ignore|refactor|"
              r"reformat|generate|create|build|release|publish|tag|type|annotate|store|copy)")
_INSTRUCTION = re.compile(
    r"^(?:(?:ok|okay|also|and|so|oh|hey|one more thing)[,!.]?\s+)*(?:please\s+)?(?:"
    r"(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|for\s+future\s+reference|whenever\s+you\s+[^,]{3,60}),?"
    rf"\s+(?:please\s+)?(?:always\s+|never\s+|(?:don't|do\s+not)\s+)?{_TASK_VERB}|"
    rf"(?:always|never|(?:don't|do\s+not)\s+ever)\s+(?:please\s+)?{_TASK_VERB}|"
    r"(?:don't|do\s+not|stop)\s+(?:suggest|suggesting|recommend|recommending|offer|offering|propose|include|"
    r"including|add|adding|use|using|write|writing|put|putting|mention|mentioning|show|showing|"
    r"send|sending|call|calling|assume|assuming)|"
    # what the user wants of a kind of task: "When you book restaurants for us, we like quiet places."
    r"(?:when|whenever)\s+you\s+[^,]{3,60},\s+(?:i|we)(?:'d)?\s+(?:really\s+|always\s+|usually\s+|much\s+)?"
    r"(?:like|prefer|love|hate|avoid|can't\s+stand|rather)"
    r")(?:s|es|ed|ing)?\b(?=(?:\s+\S+){2})", re.I)


# An instruction for the task at hand, not for every later one: "Don't add tests yet, just the fix.",
# "Don't use the cache for this run." (kept, recall gave them to every later task)
_ONE_OFF = re.compile(r"\b(?:this\s+(?:time|run|once|round|week|morning|afternoon|evening)|for\s+now|(?<!not\s)yet|"
                      r"right\s+now|today|tonight|tomorrow|at\s+the\s+moment|for\s+the\s+moment|"
                      r"(?:in|for)\s+this\s+(?:one|task|run|answer|reply|response|question|pr|commit|change|draft|email|"
                      r"message|test|step|function|file|query|trip|booking|order))\b", re.I)


def instruction(text: str) -> bool:
    """Whether a sentence is a standing instruction to the assistant (see _INSTRUCTION), not one for
    the task at hand (_ONE_OFF)."""
    return instruction_verb(text) is not None


def instruction_verb(text: str) -> str | None:
    """The verb of a standing instruction ("write" in "Always write emails to suppliers in a formal
    tone."), lowercase; None when the sentence is none."""
    text = (text or "").strip().replace("\u2019", "'")
    found = _INSTRUCTION.match(text)
    return found.group(0).split()[-1].lower() if found and not _ONE_OFF.search(text) else None


def standing(text: str) -> bool:
    """Whether a memory states a lasting preference, aversion, constraint, condition or habit of
    the user (first person, or the user named as such), and is not an episode dated to a day."""
    return standing_and_lasting(text)[0]


def lasting(text: str) -> bool:
    """Whether a memory is not an episode dated to a day: what it says stays true (every standing
    statement, a fact of the user's life or world such as "Monitoring is Prometheus and
    Grafana.", and a day that comes round again or is still ahead, such as a birthday or a due
    date), as far as its form tells."""
    return standing_and_lasting(text)[1]


# The line an append puts above a living document's earlier text (mergeguard.dated_separator).
EARLIER = re.compile(r"^---\n_\[earlier, as of \d{4}-\d\d-\d\d\]_$", re.M)


def current_part(text: str) -> str:
    """A living document's text above its first append separator: what it says now (the earlier
    text below stays for history, and for what it said that nothing newer replaced)."""
    found = EARLIER.search(text or "")
    return (text or "")[:found.start()].strip() if found else (text or "")


def standing_and_lasting(text: str) -> tuple[bool, bool]:
    """(standing, lasting) of a memory, its date read once: what recall reads of every candidate.
    An append's separator is not read: its "as of 2026-12-03" made every living document that took
    an update an episode of that day, and the current home, job or diet lost the lasting bonus to
    memories that never changed (a walk's "Book me a train to my sister's city")."""
    text = EARLIER.sub("", (text or "")).replace("’", "'")
    dated = bool(_MAYBE_DATED.search(text) and _DATED.search(text))
    is_standing = not dated and bool((_SELF.search(text) and _STANCE.search(text)) or _INSTRUCTION.match(text.strip()))
    return is_standing, not dated or bool(_RECURRING.search(text))


# What one cannot eat or take: a caution any task that names its thing needs ("Order me a Thai
# takeaway with peanut sauce." for "I'm allergic to peanuts.").
# What someone is that decides what they can eat (the user, or someone they name): the words the
# write path's rules for a condition, and for a condition put right, read.
WHAT_SOMEONE_IS = r"(?:allergic|intolerant|coeliac|celiac|diabetic|vegetarian|vegan)"
_CAUTION = re.compile(r"\b(?:allerg(?:y|ies|ic)|intoleran(?:t|ce)|celiac|coeliac|anaphyla\w*)\b", re.I)


# What the user is called on a service: a task on that service needs it ("Clone my dotfiles repo
# from GitHub." for "User's GitHub handle is dkowalski.").
_ACCOUNT = re.compile(r"\b(?:handle|username|user\s+name|user\s+id|gamertag|account\s+(?:name|id))\s+is\s+\S", re.I)


def account(text: str) -> bool:
    """Whether a memory says what the user is called on a service."""
    return bool(_ACCOUNT.search(current_part(text or "")))


_CLAUSE_BREAK = re.compile(r"[,;:.!?—]|\b(?:but|though|although|whereas|because|since|so|and)\b", re.I)


def caution(text: str) -> bool:
    """Whether a memory states an allergy or an intolerance: a clause naming one that does not say
    it is not so ("I'm not allergic to shellfish, I just don't like prawns." states none; counted
    over the whole sentence, its two negations made it one)."""
    text = current_part(text or "").replace("’", "'")
    for m in _CAUTION.finditer(text):
        starts = [b.end() for b in _CLAUSE_BREAK.finditer(text, 0, m.start())]
        end = _CLAUSE_BREAK.search(text, m.end())
        if not negated(text[starts[-1] if starts else 0:end.start() if end else len(text)]):
            return True
    return False


def stance_match(text: str) -> re.Match | None:
    """The first stance word of a statement (the extractor's hook), or None."""
    return _STANCE.search((text or "").replace("’", "'"))


_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|nothing|nobody|none)\b|n't\b", re.I)


def negated(text: str) -> bool:
    """Whether a statement says its claim is not so ("I am not allergic to peanuts.", "I don't
    drink coffee"): an odd number of negations. A claim and its negation are worded alike (cosine
    0.96 under MiniLM), so whatever compares claims by meaning asks this too."""
    return len(_NEGATION.findall((text or "").replace("’", "'"))) % 2 == 1


def asks_for_help(message: str) -> bool:
    """Whether a message asks the assistant to do or recommend something (a task), in any domain."""
    return bool(_TASK.search((message or "").replace("’", "'")))
