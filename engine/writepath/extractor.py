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

from ..person import base_form, third_person  # noqa: F401 - third_person is part of this module's interface
from ..stance import DAY, WHAT_SOMEONE_IS, instruction, negated
from .entities import PETS, ROLE, SENTENCE_BREAK, USER, Entity, GraphFact, graph_facts, main_entity, renamed
from .proposals import Proposal, RelationSpec

_SENTENCE = SENTENCE_BREAK
_FIRST_PERSON = r"(?:i|i'm|i've|i'd|i'll|im|ive|we|we're|we've|my|our)"

# (category, memory class, confidence, pattern over the sentence, case-insensitive). The first
# rule that matches names the category. Standing statements (health, preference, constraint,
# habit: what stays true of the speaker and bears on future tasks) come first; their verbs are
# generic English, not a domain's words.
_FIRST_I = (r"\b(?:i|we)\s+(?:\w+ly\s+|also\s+|just\s+|still\s+|much\s+|even\s+|always\s+|never\s+|often\s+|"
            r"kind\s+of\s+|sort\s+of\s+)*")
_I_AM = (r"\b(?:i|we)(?:'m|\s+am|\s+are|'re|'ve\s+been|\s+have\s+been)\s+"
         r"(?:\w+ly\s+|also\s+|just\s+|still\s+|so\s+|always\s+)*")
_CHATTER = (r"(?!\s*(?:\w+ly\s+)?(?:know|think|thought|remember|understand|believe|mind|care|worry|wait|imagine|"
            r"thank|stop|help|forget|see|say|tell|expect|get|go|want|agree|doubt|mean|recall|blame|complain|lie|"
            r"give|quit|let|have\s+to|need\s+to|feel|regret|deserve|said|told|claimed|mentioned|meant|asked)\b)")
# A diet or condition named by one word ("I'm vegan", "I am diabetic", "I keep kosher"): it says all
# it needs at any length, with nothing after it.
_CONDITION_WORD = (
    _I_AM + r"(?:an?\s+)?(?:severely\s+|very\s+|highly\s+|extremely\s+|strict\s+|avid\s+|committed\s+)?"
    r"(?:allergic|intolerant|sensitive|lactose|diabetic|"
    r"asthmatic|celiac|coeliac|vegetarian|vegan|pescatarian|pregnant|sober|gluten|epileptic|anemic|anaemic|"
    r"colou?r-?blind|deaf|hard\s+of\s+hearing|teetotal|dairy-free|nut-free|plant-based|kosher|halal|keto|paleo)\b|"
    r"\b(?:i|we)\s+(?:\w+ly\s+|always\s+|only\s+)?(?:keep|eat|follow)\s+(?:a\s+)?(?:strictly\s+)?(?:kosher|halal)\b")
# What a message is about to ask, not what the user owns: "I have a question about my car, can you help?"
_ASKING_SOMETHING = (r"\s+(?:(?:a|an|one|some|two|few|couple\s+of)\s+)?(?:(?:quick|small|simple|silly|weird|strange|"
                     r"follow-up|tricky|last|big)\s+)?(?:question|problem|issue|favou?r|request|idea|suggestion|doubt|"
                     r"query|concern|feeling|bug|error|thought|task)s?\b")
_SEVERAL = r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+"  # more than one, in words or digits
_NUMBER = r"(?:one|" + _SEVERAL + ")"
# Who the user is in one word that says enough: a nationality, a hand ("I'm Brazilian.", "I'm left-handed.").
_NATIONALITY = r"(?:half\s+)?(?-i:[A-Z][a-z]+(?:an|ian|ese|ish|ch|sh|i))"
_HANDED = r"(?:left|right)[\s-]handed"
_SHORT_IDENTITY = re.compile(rf"\bi(?:'m|\s+am)\s+(?:{_NATIONALITY}|{_HANDED})\s*[.!]*$", re.I)
# A status at work named by one word ("I'm retired.").
_STATUS = re.compile(r"\bi(?:'m|\s+am)\s+(?:now\s+)?(?:retired|unemployed|self-employed|married|single|divorced|"
                     r"widowed)\b", re.I)
_RULES: list[tuple[str, str, float, re.Pattern]] = [(c, k, p, re.compile(r, re.I)) for c, k, p, r in [
    # a standing fact that no longer holds: "I'm not vegetarian anymore, I eat fish now.", "I stopped
    # drinking coffee.", "I switched from Vim to Emacs." (curation puts it into the memory it changes)
    ("change", "durable_fact", 0.85,
     r"\b(?:i|we)(?:'m|\s+am|\s+are|'re)\s+(?:not|no\s+longer)\s+(?:an?\s+)?(?:[\w-]+\s+){0,2}?[\w-]+\s*,?\s*"
     r"(?:anymore|any\s+more)\b|"
     r"\b(?:i|we)(?:'m|\s+am|\s+are|'re)\s+no\s+longer\s+\w+|"
     # a condition put right: "I'm not allergic to shellfish, I just don't like prawns."
     + _I_AM + r"not\s+(?:\w+ly\s+)?(?:[\w-]+\s+)?" + WHAT_SOMEONE_IS + r"\b|"
     # a plan called off: "We're not moving to Dagster after all, we decided to stay on Airflow."
     r"\b(?:i|we)(?:'m|\s+am|\s+are|'re)\s+not\s+(?:[\w-]+\s+){1,5}?after\s+all\b|"
     r"\b(?:i|we)(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+|now\s+)?(?:stopped\s+(?!by\b|at\b|in\b)\w+|"
     r"quit\s+(?!it\b|that\b|this\b)\w+|gave\s+up\s+\w+|switched\s+(?:from|to|over)\b|"
     # what they changed: "We switched our flour supplier to Shipton Mill.", "We moved our hosting to Hetzner."
     r"(?:switched|moved|changed)\s+(?:our|my)\s+(?:[\w-]+\s+){1,3}?(?:from|to|over\s+to)\s+(?-i:[A-Z]))"),
    ("health", "durable_fact", 0.85, _CONDITION_WORD),
    # someone of the family's diet: "My partner is vegan, so we cook plant-based at home."
    ("health", "durable_fact", 0.8,
     r"\bmy\s+(?:[\w-]+\s+)?" + ROLE + r"\s+(?:is|has)\s+(?:an?\s+|also\s+|severely\s+|strictly\s+)?"
     + WHAT_SOMEONE_IS + r"\b"),
    ("health", "durable_fact", 0.85,
     r"\bi\s+(?:have|'ve\s+got|suffer\s+from|live\s+with|deal\s+with|struggle\s+with)\s+(?:a\s+|an\s+)?(?:[\w-]+\s+){0,3}?"
     r"(?:allerg(?:y|ies)|intolerance|condition|disorder|disease|sensitivity|injury|diabetes|asthma|migraines?|"
     r"arthritis|anxiety|adhd|insomnia|syndrome|deficiency|phobia|motion\s+sickness|issues|problems|tolerance)\b|"
     r"\bi\s+have\s+(?:very\s+|extremely\s+|really\s+)?sensitive\s+\w+"),
    ("health", "durable_fact", 0.85,
     r"\bi\b(?:'m)?[^.?!]{0,40}?\b(?:an?|my)\s+[^.?!]{0,40}?\b(?:diet|regimen)\b|"
     r"\bi(?:'ve|\s+have)\s+been\s+diagnosed\b"),
    ("preference", "durable_fact", 0.8,
     _FIRST_I + r"(?:prefer|love|like|enjoy|adore|hate|dislike|despise|detest|loathe|can't\s+stand|cannot\s+stand|"
     r"appreciate|value|thrive|gravitate|lean\s+towards?|swear\s+by|treasure|cherish)\b"),
    # how the user has a thing: "I drink my coffee black.", "I like my steak medium-rare."
    ("preference", "durable_fact", 0.8,
     _FIRST_I + r"(?:take|drink|have|like|want|eat|order|prefer)\s+my\s+[\w-]+\s+(?:with|without|black|plain|neat|"
     r"strong|weak|rare|medium(?:[\s-]rare)?|well[\s-]done|iced|hot|cold|extra|no|decaf|sweet|unsweetened|"
     r"spicy|mild|short|long|loose|tight|dark|light)\b"),
    # a commute at a time of day: "I take the 7:15 train to work."
    ("habit", "durable_fact", 0.75,
     _FIRST_I + r"(?:take|catch|get|ride)\s+the\s+\d{1,2}[:.]\d{2}\s*(?:am|pm|a\.m\.|p\.m\.)?\s+[\w-]+"),
    # "I'd rather take the train whenever possible.", "I'm not a morning person at all."
    ("preference", "durable_fact", 0.8,
     r"\b(?:i'd|i\s+would|we'd|we\s+would)\s+(?:much\s+|really\s+|always\s+|generally\s+)?rather\b|"
     # ("I am a night person." alone is who the speaker is: identity, below)
     + _I_AM + r"(?:not\s+(?:really\s+)?an?\s+[\w-]+\s+person\b|an?\s+[\w-]+\s+person\s*,)"),
    ("preference", "durable_fact", 0.8,
     _FIRST_I + r"(?:learn|work|sleep|focus|study|relax|perform)\s+best\b|"
     + _I_AM + r"(?:not\s+)?(?:a\s+|an\s+)?(?:big\s+|huge\s+|massive\s+|real\s+)?(?:fan\s+of|passionate\s+about|"
     r"(?!(?:(?:a|an|big|huge|massive|real|total|great|true|die-hard|lifelong|avid)\s+)+fan\b)(?:[\w-]+\s+){1,3}fan"
     r"(?!\s+of)|"
     r"into|fond\s+of|keen\s+on|obsessed\s+with|interested\s+in|crazy\s+about|not\s+interested)\b"),
    ("preference", "durable_fact", 0.8,
     _FIRST_I + r"(?:have|'ve\s+got|feel|hold)\s+(?:a|an|no|little|zero)\s+(?:[\w-]+\s+){0,2}?(?:aversion|preference|"
     r"passion|dislike|distaste|disdain|fondness|love|soft\s+spot|weakness|interest|affinity|thing\s+for|"
     r"hatred|loathing|appreciation)\b"),
    ("preference", "durable_fact", 0.8,
     _FIRST_I + r"find\s+(?:\S+\s+){1,8}?(?:\w+(?:ing|ive|ous|ful|less|ble|ic)|boring|dull|hard|difficult|easy|tedious|"
     r"overwhelming|ineffective|off-putting|uncomfortable|annoying|useless|helpful|relaxing|unpleasant|"
     r"stressful|pointless|unappealing|distracting|disorienting|slow|bland)\b"),
    ("preference", "durable_fact", 0.8,
     r"\bmy\s+(?:absolute\s+)?(?:favou?rite|go-to|preferred)\s+\w+|" + _FIRST_I
     + r"(?:exclusively|only|solely|strictly)\s+(?!had\b|was\b|got\b|did\b|went\b|saw\b)\w+|"
     r"\bi\s+(?:firmly|strongly|truly|deeply)\s+believe\b"),
    ("constraint", "durable_fact", 0.8,
     _FIRST_I + r"(?:avoid|refuse|can't|cannot|can\s+not|don't|do\s+not|never|won't|will\s+not|no\s+longer|"
     r"steer\s+clear|stay\s+away|shun|abstain)\b" + _CHATTER),
    ("constraint", "durable_fact", 0.8,
     r"\bi(?:'m|\s+am)\s+(?:not\s+(?:allowed|able|supposed)|unable|(?:\w+ly\s+)?against)\b|" + _FIRST_I
     + r"(?:try|tries|aim|want|need|have)\s+to\s+(?:avoid|minimi[sz]e|limit|reduce|cut|stay\s+away|steer\s+clear)\b"),
    ("membership", "durable_fact", 0.85,
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:a\s+|an\s+)?(?:\w+\s+){0,4}?(?:member|members|subscriber|volunteer)\b"),
    ("membership", "durable_fact", 0.85,
     r"\b(?:i|we)\s+(?:just\s+)?(?:joined|belong to|signed up for|volunteer (?:at|with|for))\b"),
    ("membership", "durable_fact", 0.8, r"\b(?:i|we)\s+have\s+(?:\w+\s+){0,3}(?:status|membership|elite)\b"),
    # "I'm now part of the fire-fighting brigade."
    ("membership", "durable_fact", 0.8,
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:now\s+|also\s+|officially\s+)?(?:a\s+)?part\s+of\s+"
     r"(?:the|a|an|our|my)\s+\w+"),
    ("home", "durable_fact", 0.85,
     r"\b(?:i|we)(?:\s+(?:live|lived|grew up|was born|were born|moved|am based|are based)|'m\s+based|'re\s+based)"
     r"\s+(?:in|to|at|near|out of|on)\b|\bi\s+(?:still\s+|now\s+)?live\s+(?:with|alone|on\s+my\s+own)\b"),
    # what the user goes by: "Call me Sam.", "I go by Sam."
    ("identity", "durable_fact", 0.85, r"^(?:please\s+)?call\s+me\s+(?-i:[A-Z])|\bi\s+go\s+by\s+(?-i:[A-Z])"),
    # how the user works: "I work remotely on Mondays and Fridays."
    ("work", "durable_fact", 0.8,
     r"\bi\s+(?:usually\s+|mostly\s+|now\s+)?work\s+(?:remotely|from\s+home|hybrid|part-time|full-time|"
     r"night\s+shifts|nights|weekends|four\s+days|(?:from\s+)?\d{1,2}(?::\d\d)?\s*(?:am|pm)?\s*(?:to|-|till|until)\s*\d)|"
     # the hours of the user's place of work: "We open at 7am every day except Mondays."
     r"\b(?:we|our\s+[\w-]+)\s+(?:(?:usually|now|only|always)\s+)?(?:open|opens|close|closes|are\s+open|is\s+open)"
     r"\s+(?:at|from|until|till)\s+\d"),
    # "English is my second language."
    ("skill", "durable_fact", 0.8,
     r"(?-i:\b[A-Z][a-z]+)\s+is\s+my\s+(?:first|second|third|native|mother)\s+(?:language|tongue)\b"),
    # what the user carries: "My phone is an iPhone 15." (what they drive is a tool, below)
    ("possession", "durable_fact", 0.75,
     r"\bmy\s+(?:car|phone|laptop|bike|computer|tablet|watch|camera|headphones|keyboard)\s+is\s+(?:a|an|the)\s+"),
    ("home", "durable_fact", 0.85, r"\b(?:i|we)(?:'m| am| are)\s+from\b"),
    ("home", "durable_fact", 0.85, r"\bmy\s+(?:home(?:town)?|home (?:airport|city|town|base)|hometown)\b"),
    ("home", "durable_fact", 0.8, r"\bi\s+(?:usually\s+|always\s+)?fly\s+(?:out of|from)\b"),
    ("work", "durable_fact", 0.8,
     r"\bi\s+(?:work|worked|am working|'m working)\s+(?:as|at|for|in)\b|\bi(?:'m| am)\s+an?\s+(?:\w+\s+){0,2}"
     r"(?:engineer|developer|teacher|nurse|doctor|designer|manager|artist|writer|student|lawyer|"
     r"counselor|dancer|chef|musician|photographer|scientist|consultant|owner|founder|instructor)\b"),
    ("habit", "durable_fact", 0.75,
     _FIRST_I + r"(?:play|practi[cs]e|train|go|run|swim|cook|bake|attend|volunteer|walk|hike|bike|cycle|read|write|"
     r"paint|draw|meditate|drink|eat|take|visit|watch|listen|teach|study|work\s+out|do|dance|sing|knit|garden|"
     r"climb|ski|surf|skate|jog|lift|commute|fly|travel)\b(?=(?:[^.]|\.(?=\w))*\b(?:every|each|on\s+(?:mondays|tuesdays|"
     r"wednesdays|thursdays|fridays|saturdays|sundays|weekends|weekdays)|daily|weekly|monthly|twice|once\s+a|"
     r"(?:in|on)\s+the\s+(?:mornings|evenings|weekends)|at\s+night|regularly|most\s+(?:days|mornings|evenings)|"
     r"from\s+time\s+to\s+time|occasionally|in\s+my\s+(?:free|spare)\s+time|as\s+a\s+hobby|for\s+fun|"
     r"(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays))\b)"),
    ("habit", "durable_fact", 0.75, _FIRST_I + r"(?:play|practi[cs]e)\s+(?:the\s+|in\s+)?[\w-]+"),
    ("decision", "durable_fact", 0.8,
     r"\b(?:i|we)(?:'ve| have)?\s+(?:finally\s+)?(?:decided|chose|chosen|picked|settled on|went with|"
     r"are going with|'re going with|will go with)\b"),
    ("milestone", "durable_fact", 0.75,
     r"\b(?:i|we)(?:'ve| have)?\s+(?:just\s+|finally\s+|recently\s+|successfully\s+|actually\s+|also\s+)*"
     r"(?:finished|completed|launched|graduated|published|shipped|released|won(?!')|opened|bought|adopted|"
     r"passed|got (?:promoted|married|engaged|accepted|hired|a new)|started (?:a|my|our|the)|"
     r"signed|landed|built|ran|painted|wrote|created|received|became|started\s+(?:on|working\s+on)|"
     r"scored|earned|achieved|set\s+a\s+(?:new\s+)?record|broke\s+(?:a|the|my)\s+(?:\w+\s+)?record)\b"),
    ("person", "durable_fact", 0.75,
     r"\bmy\s+(?:new\s+|old\s+|former\s+|current\s+|older\s+|younger\s+|little\s+|big\s+|step)?"
     r"(?:wife|husband|partner|girlfriend|boyfriend|son|daughter|kids?|children|mom|mother|dad|"
     r"father|sister|brother|friend|best friend|boss|manager|colleague|grandma|grandpa|family|dentist|doctor|"
     r"therapist|coach|mentor|landlord|neighbou?r|cousin|aunt|uncle|roommate|tech lead|team lead)\b"
     r"(?:'s\s+name)?\s+(?:\w+\s+)?(?:is|are|was|has|have|loves|likes|works|lives|just|turned|got|passed\s+away|"
     r"died)\b"),
    ("pet", "durable_fact", 0.75,
     r"\b(?:my|our)\s+(?:\w+\s+)?" + PETS + r"s?\b(?:'s\s+name)?\s+(?:\w+\s+)?(?:is|are|was|has|have|loves|likes|"
     r"just|turned|got)\b"),
    ("person", "durable_fact", 0.75, r"\b(?:i|we)(?:'m|\s+am|\s+are|'re)\s+(?:happily\s+)?(?:married|engaged)\s+to\b"),
    ("person", "durable_fact", 0.75, r"(?-i:\b[A-Z][a-z]+)\s+(?:is|was)\s+my\s+(?:\w+\s+)?(?:wife|husband|partner|"
     r"son|daughter|mom|mother|dad|father|sister|brother|friend|boss|manager|colleague|cousin|aunt|uncle|"
     r"neighbou?r|mentor|doctor|dentist|therapist|coach|landlord|roommate)\b"),
    ("person", "durable_fact", 0.75, r"\b(?:i|we)\s+have\s+(?:a|an|" + _NUMBER + r"|multiple|several|many)\s+"
     r"(?:\w+\s+)?(?:kids?|children|sons?|daughters?|sisters?|brothers?)\b"),
    ("pet", "durable_fact", 0.75, r"\bi\s+have\s+(?:a|an|" + _NUMBER + r"|multiple|several|many)\s+(?:\w+\s+)?"
     r"(?:dogs?|cats?|pets?)\b"),
    # who the speaker is: a name, an age, a birthday, the languages they speak, the tools they use
    ("identity", "durable_fact", 0.8,
     # a size, a height, a hand, a time zone, a nationality: "My shoe size is 43.", "I'm 5 foot 10.",
     # "I'm left-handed.", "I'm in the Pacific time zone.", "I'm Brazilian."
     r"\bmy\s+(?:shoe|dress|shirt|ring|waist|jeans|pants|trouser|t-shirt|jacket|hat|glove|bra|clothing)\s+size\s+is\b|"
     r"\bi(?:'m|\s+am)\s+(?:about\s+|around\s+)?(?:\d\s*(?:foot|feet|ft|')\s*\d{0,2}|1[.,]\d\d\s*m|\d{3}\s*cm)\b|"
     r"\bi(?:'m|\s+am)\s+" + _HANDED + r"\b|"
     r"\b(?:i(?:'m|\s+am)|we(?:'re|\s+are))\s+(?:in|on)\s+(?:the\s+)?[\w/+-]+(?:\s+[\w/+-]+)?\s+time\s*zone\b|"
     r"\bmy\s+time\s*zone\s+is\b|"
     r"\bi(?:'m|\s+am)\s+" + _NATIONALITY + r"\s*(?:[.!,]|$|\s+but\b|\s+and\b)|"
     r"\bmy\s+(?:full\s+|first\s+|last\s+|middle\s+|nick)?name\s+is\b|"
     # "My GitHub handle is dkowalski." (what the user is called on a service)
     r"\bmy\s+(?:(?-i:[A-Z])[\w.-]*\s+)?(?:handle|username|user\s+name|user\s+id|gamertag)\s+is\s+"
     r"(?!(?:the|a|an|not|too|very|so|still|now|different|same|taken|gone)\b)\S|"
     r"\bi(?:'m|\s+am)\s+(?:almost\s+|nearly\s+|over\s+|turning\s+)?(?:\d{1,3}|(?:twenty|thirty|forty|fifty|sixty|seventy|"
     r"eighty|ninety)(?:[\s-]\w+)?|" + _NUMBER + r")[\s-]+years?[\s-]+old\b|"
     r"\bi(?:'m|\s+am)\s+(?:turning\s+)?\d{1,3}\s*(?:[.!]?$|,\s*(?:turning|going\s+on|and)\b)|\bmy\s+birthday\s+is\b|"
     r"\bi(?:'m|\s+am)\s+(?:not\s+|happily\s+|recently\s+|newly\s+)?(?:married|single|divorced|widowed|separated)\b|"
     # "I am a plumber / an introvert / a night person / a car salesman": a noun of what one is
     r"\bi(?:'m|\s+am)\s+(?:now\s+|also\s+|still\s+|currently\s+)?an?\s+(?!(?:bit|little|lot|fan|member|part|"
     r"huge|big|real|total|complete|great|good|bad|long|few|couple|lucky|proud|happy|sucker)\b)"
     r"(?:[\w-]+\s+){0,2}?(?:[\w-]+(?:er|or|ist|ian|ant|ent|ee|ert|ic)|[\w-]*(?:man|woman|person|mom|mother|dad|father|"
     r"parent|veteran|student|nurse|chef|vegetarian|vegan|citizen|immigrant|introvert|extrovert|grad(?:uate)?))[.!]?$"),
    ("skill", "durable_fact", 0.8,
     r"\b(?:i|we)\s+(?:\w+ly\s+|also\s+)?(?:speak|can\s+speak)\s+(?:(?:fluent|some|basic|a\s+little)\s+)?"
     r"(?-i:[A-Z][a-z]+)|\bmy\s+(?:native|first|second)\s+language\s+is\b|"
     r"\bi(?:'m|\s+am)\s+(?:fluent|bilingual|trilingual|a\s+native\s+speaker)\b"),
    ("tool", "durable_fact", 0.75,
     r"\b(?:i|we)\s+(?:\w+ly\s+|still\s+|mostly\s+|mainly\s+|always\s+|now\s+)*(?:use|drive|ride|code\s+in|program\s+in|"
     r"write\s+code\s+in)\s+(?:an?\s+|the\s+|my\s+)?(?:(?:19|20)\d\d\s+)?(?-i:[A-Z][\w+#.-]*)|"
     # a tool named in lower case, with what it is for: "I use ruff for linting.", "We use pytest for tests."
     r"\b(?:i|we)\s+(?:\w+ly\s+|still\s+|mostly\s+|mainly\s+|always\s+|now\s+|also\s+)*use\s+"
     r"(?:(?:an?|the)\s+(?!(?:lot|bit|few|little|couple|same|other)\b))?(?!(?:it|this|that|them|"
     r"these|those|a|an|the|my|our|your|some|any|one|lots|too|to)\b)[a-z][\w+#.-]*(?:\s+and\s+[a-z][\w+#.-]*)?"
     # ("We use poetry, not pip, in this repo.": what it is used instead of, and where)
     r"(?:,?\s+(?:not|instead\s+of)\s+[\w+#.-]+,?)?\s+"
     r"(?:(?:for|to|as)\s+\w+|in\s+(?:this|our|the|my)\s+(?:repo|repository|project|codebase|monorepo|team|service|"
     r"app|stack|company)|here\s*[.!]?$|at\s+work\b)|"
     # the machine: "I'm on macOS Sonoma with Python 3.12.", "I'm on Ubuntu 24.04.", "We're on Postgres 15."
     r"\b(?:i(?:'m|\s+am)|we(?:'re|\s+are))\s+(?:running\s+|using\s+|still\s+|now\s+)?on\s+"
     r"(?:macos|(?-i:[A-Z])[\w.-]*)(?=\s+(?:\d|(?-i:[A-Z])|with\b))|"
     # a version the user runs: "Our Postgres is version 15.", "My Node is v20."
     r"\b(?:my|our)\s+(?-i:[A-Z])[\w.-]*\s+(?:is|runs)\s+(?:on\s+)?(?:version\s+|v)?\d"),
    # a degree: "I have a PhD in chemistry.", "I hold a master's in economics."
    ("skill", "durable_fact", 0.8,
     r"\bi\s+(?:have|hold|got|earned|completed|did)\s+(?:a|an|my)\s+(?:(?:phd|ph\.d\.?|doctorate|mba)\b|"
     r"(?:master'?s|bachelor'?s|degree|diploma|ba|bsc|msc|ma|bs|ms)\s+(?:degree\s+)?(?:in|from)\b)"),
    ("work", "durable_fact", 0.8,
     r"\bi(?:'m|\s+am)\s+(?:now\s+|currently\s+)?(?:retired|unemployed|self-employed|a\s+freelancer|freelancing|"
     r"between\s+jobs|on\s+(?:parental|maternity|paternity|sick)\s+leave)\b|"
     r"\bi\s+(?:study|studied|major\s+in|majored\s+in|teach|taught)\s+\w+(?:\s+\w+)?\s+(?:at|in)\s+"
     r"(?:(?-i:[A-Z])|(?:an?\s+|the\s+)?(?:[\w-]+\s+){0,2}(?:school|college|university|academy)\b)|"
     r"\bi\s+(?:go\s+to|attend)\s+(?:college|university|school|high\s+school|grad\s+school)\b"),
    ("project", "durable_fact", 0.75,
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:\w+ly\s+|now\s+|also\s+|still\s+)*(?:working on|building|writing|"
     r"developing|running|training for|learning|studying|researching|renovating|remodel(?:l)?ing|redoing|"
     r"restoring|refurbishing|reading|exploring|mentoring|coaching|tutoring)\b"),
    # a job lost: "I also lost my job at Door Dash this month.", "I got laid off in March."
    ("work", "durable_fact", 0.8,
     r"\b(?:i|we)(?:'ve|\s+have)?\s+(?:\w+ly\s+|also\s+|just\s+)*(?:lost\s+my\s+job|got\s+(?:laid\s+off|fired|let\s+go)|"
     r"was\s+(?:laid\s+off|fired|let\s+go|made\s+redundant))\b"),
    # when something of the user's runs out: "My passport expires in June 2027."
    ("date", "durable_fact", 0.8,
     r"\bmy\s+(?:[\w-]+\s+){1,2}?(?:expires|runs\s+out|renews|is\s+due\s+for\s+renewal)\s+(?:on|in|at)\b"),
    # a trip or an appointment of the user's with its day: "My flight to Tokyo is on March 3rd."
    ("plan", "evidence", 0.75,
     r"\bmy\s+(?:flight|train|trip|appointment|interview|exam|surgery|operation|wedding|holiday|vacation|move|"
     r"check-?up|dentist\s+appointment|doctor's\s+appointment|job\s+interview)\b(?:\s+[\w-]+){0,3}?\s+is\s+"
     r"(?:on|in|at|next|this|tomorrow|today|tonight)\b"),
    # a day that comes round again: "My mom's birthday is June 3rd.", "Our anniversary is on 12 August."
    ("date", "durable_fact", 0.8,
     r"\b(?:my|our)\s+(?:[\w-]+(?:'s)?\s+){0,2}?(?:birthday|anniversary|name\s+day)\s+is\s+(?:on\s+)?(?:the\s+)?"
     + DAY),
    # a child on the way: "My wife and I are expecting our first baby in May."
    ("family", "durable_fact", 0.8,
     r"\b(?:(?:my\s+(?:[\w-]+\s+)?[\w-]+\s+and\s+)?i|we)(?:'m| am| are|'re)\s+(?:\w+ly\s+)?expecting\s+"
     r"(?:a|an|our|my|twins)\b(?:\s+[\w-]+){0,2}?"
     r"\s*(?:baby|child|kid|son|daughter|boy|girl|twins)\b"),
    ("project", "durable_fact", 0.75, r"\b(?:my|our)\s+(?:project|app|company|startup|business|store|"
     r"studio|book|thesis|team|band|blog|frontend|backend|api|stack|service|database|website|site|codebase|repo|"
     r"pipeline|infrastructure|infra|monorepo|ci|cd|ci/cd|builds?|tests|test\s+suite|deploys|deployments?|"
     r"servers?|cluster|docs)\s+(?:\w+\s+)?(?:is|are|uses|use|has|have|needs|will|launched|just|runs|run)\b"),
    # what a team builds and with what: "We build the frontend with Svelte.", "The team deploys on Fly.io."
    ("project", "durable_fact", 0.75,
     r"\b(?:we|the\s+team)\s+(?:build|builds|write|writes|develop|develops|deploy|deploys|host|hosts|run|runs|"
     r"test|tests|ship|ships)\s+(?:[\w-]+\s+){0,4}?(?:with|on|in|using)\s+(?-i:[A-Z])"),
    # how a team works, on a schedule: "We deploy every Tuesday after the standup.", "We release on Fridays."
    ("routine", "durable_fact", 0.75,
     r"\b(?:we|the\s+team)\s+(?:usually\s+|always\s+|only\s+)?(?:deploy|release|ship|merge|review|"
     r"standup|stand\s+up|meet|sync|plan|demo|retro|rotate|backup|back\s+up|rebase|tag|triage|freeze|"
     r"deploys|releases|ships|merges|reviews|meets|syncs|plans|demos|rotates|triages)\b"
     r"(?=(?:[^.]|\.(?=\w))*\b(?:every|each|on\s+(?:mondays|tuesdays|wednesdays|thursdays|fridays|weekdays)|daily|weekly|"
     r"biweekly|fortnightly|monthly|nightly|twice\s+a|once\s+a|(?:mondays|tuesdays|wednesdays|thursdays|"
     r"fridays))\b)"),
    # who has which role in the team: "Priya is our tech lead."
    ("role", "durable_fact", 0.75,
     r"(?-i:\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s+(?:is|was)\s+(?:now\s+)?our\s+(?:new\s+)?(?:tech\s+lead|team\s+lead|"
     r"lead|manager|engineering\s+manager|product\s+manager|pm|product\s+owner|designer|cto|ceo|architect|"
     r"scrum\s+master|on-call|release\s+manager|owner|maintainer|qa|tester|devops|sre)\b"),
    ("plan", "evidence", 0.7,
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:planning|going|hoping|about|flying|traveling|travelling|"
     r"heading|moving)\s+(?:to|on)\b|\b(?:i|we)(?:'ve| have)\s+booked\b|"
     # "We're putting together a talent show for the kids next month.", "I'm taking some time off this weekend"
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:\w+ly\s+|also\s+)*(?:putting\s+together|organi[sz]ing|hosting|throwing|"
     r"taking\s+(?:some\s+)?(?:time|days?|a\s+week)\s+off)\b|"
     # "I'm really excited to watch this new show…"
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:\w+ly\s+|so\s+)*(?:excited|looking\s+forward)\s+to\s+"
     r"(?!(?:see|hear|meet|chat|talk|catch)\b)\w+|"
     # "I'm starting at Brightwave Analytics next month as a senior data engineer."
     r"\bi(?:'m|\s+am)\s+(?:\w+ly\s+)?(?:starting|joining)\s+(?:a\s+new\s+(?:job|role|position)\s+)?(?:at|with)\s+"
     r"(?:the\s+)?(?-i:[A-Z])"),
    ("habit", "durable_fact", 0.75,
     r"\b(?:i|we)\s+(?:always|never|usually|often|regularly|typically|normally)\s+"
     # ("I never said I was vegetarian." says what was not said, not a habit)
     r"(?!(?:been|said|told|claimed|mentioned|asked|meant|thought)\b)\w+"),
    # what the user did or was before: "I used to live in Paris.", "I used to play the violin."
    ("history", "durable_fact", 0.7,
     r"\b(?:i|we)\s+used\s+to\s+(?:live|work|play|be|have|study|teach|run|own|go|do|swim|dance|sing|paint|"
     r"write|ride|race|compete|coach|volunteer)\b(?!\s+(?:there|here|it|that|this|them)\b)"),
    # a goal or a deadline: "I want to learn Rust this year.", "I need to finish the report by Friday."
    ("plan", "evidence", 0.7,
     _FIRST_I + r"(?:want|plan|hope|intend|aim|am\s+hoping|'m\s+hoping)\s+to\s+(?:learn|start|finish|run|build|visit|"
     r"buy|save|become|switch|read|write|launch|quit|lose|get\s+(?:better|fit|a\s+new))\b|"
     + _FIRST_I + r"(?:need|have)\s+to\s+(?:finish|submit|send|deliver|file|pay|renew|ship|hand\s+in)\s+"
     r"(?:[\w'-]+\s+){1,5}?by\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|"
     r"next|the\s+end|end\s+of|\d)"),
    ("plan", "evidence", 0.7,
     r"\b(?:i|we)(?:'m| am| are|'re)\s+(?:still\s+|now\s+|currently\s+)?(?:considering|looking (?:into|for)|"
     r"searching for|saving (?:up )?for|trying to|preparing for|getting ready for|thinking of|"
     r"thinking\s+about\s+\w+ing|off\s+to)\b|"
     # "I've been wanting to visit NYC."
     r"\b(?:i|we)(?:'ve|\s+have)\s+been\s+(?:wanting|meaning|hoping|planning|dying|itching)\s+to\s+\w+"),
    # what the user is doing these days: "I'm doing kickboxing and it's giving me so much energy.",
    # "I'm offering one-on-one mentoring and training to dancers." (not "I'm doing OK")
    ("activity", "durable_fact", 0.7,
     r"(?<!what\s)\b(?:i|we)(?:'m| am| are|'re)\s+(?:now\s+|currently\s+|also\s+|still\s+)?(?:doing|taking|learning|"
     r"practi[cs]ing|studying|teaching|offering|coaching|volunteering\s+(?:at|with|for|as)|taking\s+up|"
     r"training\s+(?:for|in|as))\s+"
     r"(?!(?:ok|okay|well|good|great|fine|alright|all\s+right|better|worse|pretty|so|really|much|a\s+lot|it|that|"
     r"this|something|anything|nothing|my\s+best|the\s+same|you|is|was|are|what|(?:the|some)\s+time|time|"
     r"a\s+(?:break|look|moment|minute|second|while))\b)[\w'-]+"),
    ("activity", "durable_fact", 0.7, r"\b(?:i|we)(?:'ve| have)\s+been\s+(?:\w+ly\s+)?(?!thinking|wondering|"
     r"meaning|feeling|going through)\w+ing\b"),
    ("possession", "durable_fact", 0.7, r"\b(?:i|we)(?:'ve| have)\s+got\b(?!" + _ASKING_SOMETHING + r")|"
     r"\bi\s+(?:still\s+)?(?:have|own)\s+(?:a|an|my|this|that|some|lots|multiple|several|many|" + _NUMBER + r")\b"
     r"(?!" + _ASKING_SOMETHING + r")"),
    ("event", "evidence", 0.65,
     r"\b(?:i|we)(?:'ve| have)?\s+(?:just\s+|recently\s+|finally\s+|also\s+)?(?:went|gone|been to|visited|attended|"
     r"made|took|tried|met|saw|joined|found|read|watched|played|gave|performed|volunteered|organized|"
     r"hosted|competed|traveled|travelled|taught|learned|started|"
     r"(?:got|had)(?!" + _ASKING_SOMETHING + r")\s+(?:a|an|my|our|some)|"
     r"had\s+the\s+(?:chance|opportunity|pleasure|hono(?:u)?r|privilege)\s+to)\b"),
]]
_CONDITION = next(r for *_, r in _RULES if r.pattern == _CONDITION_WORD)  # the rule's own compiled pattern
_INTERJECTION = re.compile(
    r"^(?:(?:oh|ooh|yeah|yep|yes|wow|haha|hah|lol|hey|hi|hello|thanks|thank you|cool|great|awesome|aw+|"
    r"ah|omg|well|sure|ok|okay|so|totally|definitely|absolutely|exactly|true|nice|"
    # a correction's or an aside's lead-in: "Actually my sister lives in Porto now." is a fact about
    # the sister, and "Actually User's sister…" would be its text
    r"actually|anyway|btw|by the way|fyi|just so you know|honestly|in fact|quick update|update|correction|"
    r"wait|hang on|sorry|oops|my mistake|my bad|"
    # an addition's: "Also I live in Madrid." is "I live in Madrid." (its text was "Also User lives…")
    r"also|and|plus|besides|incidentally|but|though|however|"
    # news told: "Big news: we moved to York last weekend." ("Big news: User and others moved…")
    r"(?:big|great|good|some|exciting|sad|bad)\s+news|news|guess\s+what|fun\s+fact|"
    # a request to remember is not part of what is remembered: "Please remember that my dog is a
    # beagle." is "my dog is a beagle" (its text was "Please remember that User's dog…")
    r"for the record|for (?:some\s+)?context|(?:some\s+)?context|background|(?:just\s+)?(?:a\s+)?heads[\s-]up|"
    r"(?:please\s+)?(?:(?:do\s+)?remember|note|keep in mind|bear in mind|don't forget|"
    r"do not forget)(?:\s+that)?|"
    # a correction addressed to the notes: "Please fix your notes: my sister lives in Madrid now."
    r"(?:please\s+)?(?:fix|update|correct|change)\s+(?:your|the|my)\s+(?:notes?|records?|memory|memories)|"
    r"for\s+your\s+(?:notes|records))"
    r"\b[\s,!.:;~-]*)+", re.I)
# An aside to the listener at a sentence's end: "I'm 38 years old, by the way."
_ASIDE_TAIL = re.compile(r",?\s+(?:by\s+the\s+way|btw|fyi|just\s+so\s+you\s+know|for\s+the\s+record)\s*(?=[.!]*$)",
                         re.I)
# A request to remember asked as a question: "Can you remember that I'm vegetarian?" says "I'm
# vegetarian." (a question is otherwise skipped: it asks, it does not tell).
_ASKED_TO_REMEMBER = re.compile(
    r"^(?:(?:can|could|would|will)\s+you\s+)(?:please\s+)?(?:remember|note|keep\s+in\s+mind|bear\s+in\s+mind|"
    r"make\s+a\s+note)(?:\s+(?:of\s+)?that)?[\s,:]+(?P<what>[^?]*[^?\s,])\s*(?:,?\s*please)?\s*\?+$", re.I)
_SKIP = re.compile(
    r"^(?:if|when|would|could|should|maybe|perhaps|do you|did you|have you|are you|can you|what|why|"
    r"how|where|who|let me|let's|thanks|thank you|hey|hi|hello|wow|oh|haha|lol|sure|ok|okay|"
    # a denial of what was said ("I never told you I lived in Paris.") says nothing of the user
    r"i\s+(?:never|didn't|did\s+not)\s+(?:said|say|told|tell|claimed|claim|mentioned|mention))\b", re.I)
_HEDGE = re.compile(r"\b(?:might|maybe|perhaps|probably|wondering|not sure|thinking about whether|"
                    r"if i|would love to|wish)\b|"
                    # said in jest: "I'm allergic to Mondays lol."
                    r"\b(?:lol|lmao|rofl|haha+|hehe+|jk|just\s+kidding|kidding)\W*$|[\U0001F602\U0001F923\U0001F643\U0001F61C]",
                    re.I)
_MIN_WORDS, _MAX_WORDS = 4, 80


def _hedged(sentence: str) -> bool:
    """Whether the speaker hedges what they say ("I might be lactose intolerant."); a hedge about
    the listener ("I made a cake the other day, maybe you would like that!") hedges nothing of it."""
    return any(not _TO_THE_LISTENER.match(sentence, m.end()) for m in _HEDGE.finditer(sentence))


_TO_THE_LISTENER = re.compile(r"\s+(?:you|your)\b", re.I)
@dataclass(frozen=True)
class Statement:
    turn: int
    text: str  # the original sentence
    fact: str  # rewritten in the third person
    category: str
    memory_class: str
    confidence: float
    own: str = ""  # a standing statement's kept span in the speaker's own words (first person)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text or "") if s and s.strip()]


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


_TAIL = re.compile(r",\s+(?:so|but|and you|can you|could you|please|which means|(?:maybe|perhaps)\s+(?:you|we))\b|"
                   r"\s+-\s+|;\s+|\s+but\s+", re.I)


def _cut_tail(sentence: str, after: int) -> str:
    """Drop a trailing clause addressed to the listener ("..., so book Delta when you can")."""
    m = _TAIL.search(sentence, after)
    return sentence[:m.start()] if m else sentence


STANDING = frozenset({"health", "preference", "constraint", "habit", "change", "instruction"})
# The kinds of statement a team session keeps from the rules: the team's, not the speaker's own.
TEAM_KINDS = frozenset({"decision", "project", "milestone", "routine", "role"})
# A trailing clause addressed to the listener ("..., so book Delta when you can"): a standing
# statement loses only this; its reasons and second halves ("; I prefer vinyl", "due to my
# gluten intolerance") are what make it useful later.
_LISTENER_TAIL = re.compile(r",\s+(?:so|and)\s+(?:you|can you|could you|please|"
                            r"(?:keep|bear)\s+(?:that|this)\s+in\s+mind)\b|,\s+(?:can you|could you|please)\b|"
                            r",\s+(?:maybe|perhaps)\s+(?:you|we)\b|"
                            # the request the statement was said for: "…, so suggest a dinner we can both enjoy."
                            r",\s+so\s+(?:please\s+)?(?:suggest|recommend|find|book|give|tell|show|help|pick|plan|"
                            r"make|get|order)\b", re.I)
_SELF_WORD = re.compile(r"\b" + _FIRST_PERSON + r"\b", re.I)
_CALL_ME = re.compile(r"^(?:please\s+)?(?:(?:everyone|everybody|people|most\s+people|my\s+friends|friends)\s+)?"
                      r"calls?\s+me\s+(?P<name>(?-i:[A-Z][\w'-]+)(?:\s+(?-i:[A-Z][\w'-]+))?)\s*[.!]*$",
                      re.I)
# The courtesy of a request, which a kept instruction does without ("so please don't suggest…").
_PLEASE = re.compile(r"(?:(?<=^)|(?<=[,;]\s)|(?<=\bso\s)|(?<=\band\s))please,?\s+", re.I)


# Text a message carries that is not the speaker telling about themselves. A walk pasted a cousin's
# bio to be proofread ("Hi, I'm Laura. I live in Toronto and I work at Shopify…") and the user's
# home and job moved to Toronto and Shopify; a story asked for in the first person ("Start with:
# I live on a ship called the Black Gull") became where the user lives.
# A quoted passage (four words or more: a quoted name or title is part of what is said), a code
# block, a quoted line of an e-mail:
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|```.*?(?:```|\Z)|^[ \t]*>[^\n]*', re.S | re.M)
# A request for a text: what follows its colon is the text's, not the speaker's ("Proofread this: …",
# "Start with: …", "Translate the following: …").
_WORK_ON_A_TEXT = (r"write|draft|compose|proofread|proof-read|rewrite|re-write|reword|rephrase|translate|edit|"
                   r"polish|summari[sz]e|paraphrase|improve|shorten|check|fix|correct|review|format|answer|critique")
_WRITE = rf"(?:{_WORK_ON_A_TEXT}|continue|respond\s+to|reply\s+to|start|begin|end|open)"
_FOR_A_TEXT = re.compile(rf"(?:^|[.!?]\s+|\n)\s*(?:(?:please|can\s+you|could\s+you|would\s+you|will\s+you|help\s+me|"
                         rf"i\s+need\s+you\s+to|i\s+want\s+you\s+to|now)\s+)*{_WRITE}\b"
                         # "Please fix your notes: my sister lives in Madrid now." is the speaker's
                         r"(?!\s+(?:your|the|my)\s+(?:notes?|records?|memory|memories)\b)[^.!?\n]*?:", re.I)
# A request for fiction or a role for the speaker: from its sentence on, nothing is the speaker's own
# ("Write a short story in first person where I'm a pirate.", "Let's role-play: …"). A role for the
# listener ("Imagine you're a travel agent. I live in Boston.") leaves the speaker's facts theirs.
_FICTION = re.compile(r"\b(?:(?:write|tell|make\s+up|draft|compose|invent|create|give\s+me)\b[^.!?\n]{0,40}?\b"
                      r"(?:story|stories|poem|poems|song|lyrics|limerick|haiku|tale|fable|fiction|screenplay|script|"
                      r"scene|dialogue|monologue|novel|chapter|role-?play)|role-?play|"
                      r"(?:pretend|imagine)\s+(?:that\s+)?(?:i|we)(?:'m|'re|\s+am|\s+are|\s+was|\s+were)|"
                      r"in\s+(?:the\s+)?first[-\s]person|in\s+character)\b", re.I)
_SENTENCE_START = re.compile(r"(?:^|(?<=[.!?\n]))\s*")
# A line that hands over material, and so whose following lines are the material's: a walk's coding
# agent sent "My colleague Priya sent this on Slack, can you draft a reply?" over Priya's message
# ("I live in Berlin…", and the user's home moved there), "…Sentry shows:" over a customer's bio,
# "Squash these into one commit message:" over someone's commits, "Can you tighten the intro of
# our README?" over the README. It asks for work on a text or says where the text comes from, and
# names the text; "Some context about me:" hands over the speaker's own words.
_HANDS_OVER = re.compile(
    rf"^(?=.*\b(?:{_WORK_ON_A_TEXT}|tighten|reply|respond|squash|refactor|debug|"
    r"explain|look\s+at|clean\s+up|sent|send|wrote|writes|said|says|shows?|showing|posted|pasted|got|getting|"
    r"seeing|see|throws?|throwing|returns?|prints?|printed|logs?|logged)\b)"
    r"(?=.*\b(?:this|these|that|the\s+following|below|here's|here\s+is|here\s+are|output|errors?|traceback|trace|"
    r"message|e-?mail|snippet|reply|draft|readme|intro|commits?|diff|patch|code|function|class|section|paragraph|"
    r"bio|ticket|review|transcript|excerpt|quote|doc|docs|document|post|tweet|slack|text|log|logs|shows?|says)\b)|"
    r"\b(?:sentry|the\s+logs?|the\s+console|the\s+terminal|the\s+output|ci|the\s+build|the\s+test)\s+"
    r"(?:shows?|says|said|prints?|printed|gives?|gave|returns?|returned)\b", re.I)
_ABOUT_ME = re.compile(r"\b(?:about\s+(?:me|myself)|my\s+(?:preferences|background|setup|details|situation|context)|"
                       r"what\s+i\s+(?:want|like|need|prefer))\b", re.I)
# A line that is not said in anyone's voice: an exception or a log line ("ValueError: I can't parse
# 'foo'." became the user's constraint), indented code, a code comment.
_NOT_SAID = re.compile(r"^(?:[ \t]{4,}|\t)\S.*$|^[ \t]*(?:#|//|/\*|\*|--)\s.*$|"
                       r"^[ \t]*(?:[\w.]*(?:Error|Exception|Warning|Fault)\b|Traceback\b|Caused\s+by\b|"
                       r"(?:error|fatal|panic|warn(?:ing)?|info|debug|trace)\b\s*[:\]]|\[\w+\]|"
                       r"\d{4}-\d\d-\d\d[T ]\d|at\s+[\w$.<>]+\s*\().*$", re.M)


def _handed_over(text: str) -> str:
    """`text` up to the line that hands over material, when more lines follow it (_HANDS_OVER)."""
    if "\n" not in text:
        return text
    at = 0
    for line in text.splitlines(keepends=True):
        at += len(line)
        if line.strip() and _HANDS_OVER.search(line) and not _ABOUT_ME.search(line) and text[at:].strip():
            return text[:at]
    return text


_NAMES_A_TITLE = re.compile(r"(?:\b(?:called|named|titled|entitled)|\b(?:book|film|movie|show|series|song|album|game|"
                            r"podcast|play|novel|track|episode|app|course|talk|paper)),?\s*$", re.I)


def _a_title(text: str, m: re.Match) -> bool:
    """Whether a quoted passage is the title of something ('a new show called "The Wheel of Time"',
    which was cut to 'called .'): a few words, named as one or in title case."""
    quoted = m.group(0)
    words = quoted.strip('"“”').split()
    if quoted[:1] not in '"“' or not 1 <= len(words) <= 8:
        return False
    long = [w for w in words if len(w) > 3]
    in_title_case = bool(long) and all(w[:1].isupper() for w in long)
    return in_title_case or bool(_NAMES_A_TITLE.search(text, max(0, m.start() - 40), m.start()))


def own_words(text: str) -> str:
    """What of `text` the speaker says in their own voice: without quoted passages, code blocks,
    quoted lines, exception and log lines, indented code and code comments; up to a line that hands
    over material, or the colon of a request for a text; before the sentence of a request for
    fiction or a role."""
    fiction = _FICTION.search(text)
    if fiction:
        text = text[:max((m.start() for m in _SENTENCE_START.finditer(text, 0, fiction.start() + 1)), default=0)]
    text = _QUOTED.sub(lambda m: m.group(0) if _a_title(text, m) else " " if len(m.group(0).split()) >= 4
                       or m.group(0)[:1] in "`>" else m.group(0), text)
    text = _NOT_SAID.sub(" ", _handed_over(text))
    m = _FOR_A_TEXT.search(text)
    return text[:m.end()] if m else text


# What the user has or does on one day to come is an episode, not a lasting fact: a walk's "I have a
# meeting with Fiona at 3pm tomorrow." was a possession, and "I'm working on the quarterly report
# today." a project, kept for good. (A move, a job, a milestone said with its day stay.)
_FOR_A_DAY = frozenset({"possession", "project", "activity"})
_TODAY_OR_AHEAD = re.compile(r"\b(?:today|tonight|tomorrow|this\s+(?:morning|afternoon|evening)|this\s+weekend|"
                             r"(?:this|next|on|coming)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
                             r"(?!s))\b", re.I)
_THE_TEAM = re.compile(r"^(?:the|our)\s+team(?:(\s*'s\s+)|\s+(.*))", re.I | re.S)


def _unquoted(sentence: str) -> str:
    """The sentence without quotation marks around it or left over at an end ('I love hiking."' was
    kept as 'I love hiking.".')."""
    sentence = sentence.strip()
    while len(sentence) > 1 and sentence[0] in "\"“" and sentence[-1] in "\"”" and sentence.count('"') <= 2:
        sentence = sentence[1:-1].strip()
    if sentence.count('"') % 2 == 1:
        sentence = sentence.strip('"').strip()
    return sentence.strip("“”").strip() if (sentence.count("“") + sentence.count("”")) % 2 else sentence


def statements(text: str, turn: int = 0, subject: str = "User", group: str | None = None) -> list[Statement]:
    """Every statement of a lasting kind in one message: first-person ones, and third-person ones
    that place a named person ("Anna moved to Porto."), said in the speaker's own voice (own_words)."""
    found: list[Statement] = []
    for sentence in _parts(sentences(own_words((text or "").replace("’", "'")))):
        sentence = _unquoted(sentence)
        sentence = _ASKED_TO_REMEMBER.sub(r"\g<what>.", _INTERJECTION.sub("", sentence).strip()).strip()
        sentence = _ASIDE_TAIL.sub("", sentence)
        if sentence and sentence[0].islower():
            sentence = sentence[0].upper() + sentence[1:]
        if group is not None:  # a team session: "The team builds the frontend with Svelte." is "We build…"
            sentence = _THE_TEAM.sub(lambda m: "Our " if m.group(1) else "We " + base_form(m.group(2)), sentence)
        words = sentence.split()
        called = _CALL_ME.match(sentence)
        if called:  # "Call me Sam." is what the user goes by ("Call User Sam." it would read)
            found.append(Statement(turn, sentence, f"{subject} goes by {called.group('name')}.", "identity",
                                   "durable_fact", 0.85))
            continue
        said_of_self = _SELF_WORD.search(sentence) is not None
        fix = renamed(sentence) if not said_of_self and not sentence.endswith("?") else None
        if fix:
            # "Actually, it's Ana, not Anna.": curation renames the anchor and the memories on it
            found.append(Statement(turn, sentence, f"The name is spelled {fix[1]}, not {fix[0]}.", "rename",
                                   "durable_fact", 0.8))
            continue
        # "I'm vegan." is short and says all it needs to: a diet, a condition or being retired is kept at any length
        if not (_MIN_WORDS - 1 <= len(words) <= _MAX_WORDS
                or (len(words) >= 2 and (_CONDITION.search(sentence) or _STATUS.search(sentence)
                                         or _SHORT_IDENTITY.search(sentence)))):
            continue
        if sentence.rstrip().endswith("?"):
            continue
        instructs = instruction(sentence)
        if not instructs and (_SKIP.match(sentence) or _hedged(sentence)):
            continue
        if instructs:
            # "Never use semicolons in my JavaScript.": how every later task is to be done
            span = _PLEASE.sub("", sentence).strip()
            span = span[:1].upper() + span[1:]
            if len(_key_words(span, subject)) >= 2:
                found.append(Statement(turn, sentence, third_person(span, subject, group), "instruction",
                                       "durable_fact", 0.8, own=span))
            continue
        if not said_of_self:
            placed = _about_someone(sentence, turn)
            found += placed
            continue
        for category, memory_class, confidence, pattern in _RULES:
            m = pattern.search(sentence)
            if m:
                if (category in STANDING and pattern is not _CONDITION and not m.group(0).lower().startswith("my")
                        and _names_nothing(sentence[m.end():])):
                    break
                span = _span(sentence, m, category)
                fact = third_person(span, subject, group)
                if len(_key_words(fact, subject)) < _least_words(category, sentence):
                    break  # "I love it!" names nothing worth keeping
                if category in _FOR_A_DAY and _TODAY_OR_AHEAD.search(span):
                    memory_class = "evidence"  # "I have a meeting with Fiona at 3pm tomorrow.": it expires
                found.append(Statement(turn, sentence, fact, category, memory_class, confidence,
                                       own=span if category in STANDING else ""))
                break
        else:
            found += _naming(sentence, turn, subject, group)
    return found


# Two statements of the speaker joined by "and": "my name is Daniel Ortiz and I'm a backend
# developer" kept only the second (one fact a sentence), and the name was lost.
_JOINED = re.compile(r",?\s+and\s+(?=(?:i|i'm|i've|my)\s)", re.I)


# A sentence that only names what the one before it named: "We got a puppy! A cocker spaniel called
# Biscuit." (apart, neither said whose Biscuit is, and nothing was kept)
_NAMED_AFTER = re.compile(r"^(?:An?|The)\s+(?:[\w-]+\s+){0,3}?(?:named|called)\s+[A-Z][\w'-]*[.!]?$")
_ENDS_IN_A_PET = re.compile(rf"\b{PETS}s?\s*[.!]*$", re.I)


# A question asked on the back of a statement: "My daughter Maia is 6 and obsessed with dinosaurs,
# any book ideas for her birthday?" (the question mark hid the statement before it)
_ASKED_AFTER = re.compile(r",\s+(?=(?:any|anything|what|which|how|where|can\s+you|could\s+you|would\s+you|"
                          r"do\s+you|got\s+any|is\s+there|are\s+there|ideas|suggestions|recommendations)\b)[^,]*\?$",
                          re.I)


def _parts(sentences_: list[str]) -> list[str]:
    """Each sentence, split where "and" joins two first-person statements of four words or more,
    joined to the one before when it only names what that one named (_NAMED_AFTER), and without a
    question asked after its comma (_ASKED_AFTER)."""
    out = []
    for sentence in sentences_:
        asked = _ASKED_AFTER.search(sentence)
        if asked and len(sentence[:asked.start()].split()) >= _MIN_WORDS and not _HANDS_OVER.search(sentence):
            sentence = sentence[:asked.start()] + "."  # (a line handing material over stays a request)
        if out and _NAMED_AFTER.match(sentence) and _ENDS_IN_A_PET.search(out[-1]):
            out[-1] = out[-1].rstrip(" .!") + ", " + sentence[0].lower() + sentence[1:]
            continue
        pieces = _JOINED.split(sentence)
        if len(pieces) > 1 and all(len(p.split()) >= _MIN_WORDS for p in pieces) \
                and _SELF_WORD.search(pieces[0]):
            out += [p.rstrip(" ,") + ("" if p.rstrip().endswith((".", "!", "?")) else ".") for p in pieces]
        else:
            out.append(sentence)
    return out


_COUNT = re.compile(r"\b(?:" + _SEVERAL + r"|multiple|several)\b", re.I)


def _least_words(category: str, sentence: str) -> int:
    """How many key words a fact of this kind must keep to say something. Three for an event or a
    plan ("User went there." says nothing); two for who the speaker is when it names someone,
    somewhere or how many ("User lives in Lisbon.", "User is married to Sam.", "User has two kids.")."""
    if category == "health":
        return 1
    if category in STANDING:
        return 2
    if category in ("person", "pet", "possession") and _KIN_OR_PET.search(sentence):
        return 1  # "User has a dog.", "User has a younger sister."
    if category in _WHO and (graph_facts(sentence) or _COUNT.search(sentence)):
        return 2
    if category in _SELF:
        # a job said in one word is enough: "User is a nurse." ("I'm a nurse." gave nothing)
        one = category == "identity" or _STATUS.search(sentence) or (category == "work" and _A_JOB.search(sentence))
        return 1 if one else 2
    if category == "project" and _LEARNING.search(sentence):
        return 2  # "User is learning Japanese." says what the user is doing
    return 3


_LEARNING = re.compile(r"\b(?:learning|studying)\s+(?-i:[A-Z])|\b(?:learning|studying)\s+(?:to\s+)?\w+", re.I)
_WHO = frozenset({"home", "work", "person", "pet", "membership", "possession", "skill", "tool"})
# Rules whose own words say what kind of thing the fact names ("User is a software engineer.",
# "User speaks Spanish.", "User uses Neovim.", "User's name is Sam."): fewer words say enough.
_SELF = frozenset({"work", "skill", "tool", "identity", "home"})
_A_JOB = re.compile(r"\bi(?:'m|\s+am)\s+(?:now\s+|also\s+|still\s+|currently\s+)?an?\s+\w+\s*[.!]*$", re.I)
_KIN_OR_PET = re.compile(r"\b(?:a|an|my|" + _SEVERAL + r"|multiple|several|many)\s+(?:[\w-]+\s+)?(?:" + PETS
                         + r"|kid|child|son|daughter|sister|brother|"
                         r"baby|grandchild|twin)s?\b", re.I)


def _naming(sentence: str, turn: int, subject: str, group: str | None = None) -> list[Statement]:
    """A first-person sentence no rule kept that still names someone or somewhere in the speaker's
    life ("we got another cat named Bailey too"): kept for the graph, as a relation."""
    if not graph_facts(sentence) or len(sentence.split()) < _MIN_WORDS:
        return []
    fact = third_person(_cut_tail(sentence, 0), subject, group)
    return [Statement(turn, sentence, fact, "relation", "durable_fact", 0.7)]


# A standing statement must name what it is about: "I love how it turned out", "I really
# appreciate your support" name nothing a later task could use.
_EMPTY_OBJECT = re.compile(r"^\s*(?:\w+ly\s+)?"
                           r"(?:it|it's|this|that|these|those|them|how|what|your|you|him|her|everything|"
                           r"all\s+of\s+(?:it|this|them)|so\s+much|a\s+lot|every\s+minute)\b", re.I)
_REASON_LEAD = re.compile(r"^(?:due\s+to|because|as\s+an?|since|given|being|after|with|owing\s+to|for)\b", re.I)


def _names_nothing(rest: str) -> bool:
    """Whether what follows a stance word is only a pronoun ("I love it", "I like that!"); "that"
    opening a clause of its own ("I firmly believe that resources should be free") names plenty."""
    m = _EMPTY_OBJECT.match(rest)
    if not m:
        return False
    word, after = m.group(0).strip().lower(), rest[m.end():].split()
    if word == "it" and after and after[0].lower().strip(",") in ("when", "whenever", "if") and len(after) >= 4:
        return False  # "I hate it when people schedule meetings on Friday afternoons."
    return not (word == "that" and len(after) >= 4)


_AND_I = re.compile(r"(?:\b(?-i:[A-Z][a-z]+)|\bmy\s+(?:[\w-]+\s+)?[\w-]+)\s+and\s+(?=i\b)", re.I)


def _span(sentence: str, m: re.Match, category: str) -> str:
    """What of the sentence the fact keeps: a standing statement keeps all of it but a lead-in not
    about the speaker and a tail addressed to the listener; other kinds keep the matched clause."""
    if category not in STANDING:
        partner = _AND_I.search(sentence, 0, m.start() + 1)  # "Sam and I live in Porto." is both of them
        start = partner.start() if partner and partner.end() == m.start() else m.start()
        return _clause(_cut_tail(sentence, m.end()), start)
    tail = _LISTENER_TAIL.search(sentence, m.end())
    if tail and instruction(sentence[tail.start():].lstrip(" ,").removeprefix("so ").removeprefix("and ")):
        # "I'm vegetarian, so please don't suggest restaurants that only serve steak.": a standing
        # instruction is what the statement is for (it lost its second half)
        return _PLEASE.sub("", sentence)
    kept = sentence[:tail.start()] if tail else sentence
    lead = _clause(kept, m.start())
    head = kept[:len(kept) - len(lead)]
    return kept if (_SELF_WORD.search(head) or _REASON_LEAD.match(head)) else lead


_SOMEONES_CONDITION = re.compile(r"^(?-i:[A-Z][a-z]+)(?:\s+(?-i:[A-Z][a-z]+))?\s+(?:is|has|'s)\s+(?:\w+ly\s+|also\s+)?"
                                 rf"(?:an?\s+|severe\s+)?(?:{WHAT_SOMEONE_IS}|asthmatic|(?:[\w-]+\s+)?allergy)\b")
_NOT_SOMEONES_CONDITION = re.compile(r"^(?-i:[A-Z][a-z]+)\s+(?:isn't|is\s+not|wasn't|was\s+not)\s+(?:\w+ly\s+)?"
                                     rf"(?:[\w-]+\s+)?{WHAT_SOMEONE_IS}\b[^.]*,\s+(?:it's|it\s+is|it\s+was)\b")


def _as_said(sentence: str) -> str:
    """A third-person sentence kept as it was said, ending in a full stop."""
    return sentence.rstrip(" !") + ("" if sentence.rstrip().endswith(".") else ".")


def _about_someone(sentence: str, turn: int) -> list[Statement]:
    """A third-person sentence that places a named person (where they live or work), or says what
    they cannot eat ("Leo is allergic to eggs, so any birthday cake needs to be egg-free.": a walk's
    child; what the user cooks and books for them)."""
    if _SOMEONES_CONDITION.match(sentence) or _NOT_SOMEONES_CONDITION.match(sentence):
        fact = _as_said(sentence)
        # "Tom isn't gluten intolerant, it's his girlfriend Sofia who is.": a correction, which
        # curation puts into the memory that said he is (curation.replaced_document)
        said_not = negated(sentence.split(",")[0])
        return [Statement(turn, sentence, fact, "change" if said_not else "health", "durable_fact", 0.8)]
    facts = [f for f in graph_facts(sentence)
             if f.source.name != USER and f.relation in ("lives_in", "works_at", "from")]
    if not facts or len(sentence.split()) < 3:
        return []
    return [Statement(turn, sentence, _as_said(sentence), "person", "durable_fact", 0.75)]


def _key_words(fact: str, subject: str) -> list[str]:
    stop = {"is", "are", "was", "has", "a", "an", "the", "and", "of", "to", "in", "on", "for", "with",
            "at", "my", "her", "his", "their", "really", "just", "very", "so", "it", "this", "that", "them",
            "you", "too", "others", "others'", subject.lower(), subject.lower() + "'s"}
    return [w for w in re.findall(r"[\w'-]+", fact) if w.lower() not in stop]


# Words a topic's name does without: the stance and its adverbs say how, not what about ("User's
# preference: trains flying", not "user preference: prefers trains dislike").
_NOT_NAMING = {"prefer", "prefers", "like", "likes", "love", "loves", "enjoy", "enjoys", "adore", "adores", "hate",
               "hates", "dislike", "dislikes", "despise", "despises", "detest", "detests", "loathe", "loathes",
               "find", "finds", "avoid", "avoids", "refuse", "refuses", "can't", "cannot", "don't", "doesn't",
               "won't", "not", "no", "never", "always", "also", "still", "only", "usually", "often", "even", "much",
               "play", "plays", "go", "goes", "have", "had", "am", "be", "been", "being", "does", "do", "when",
               "while", "if", "because", "but", "or", "as", "than", "i", "me", "we", "our", "us", "who", "which",
               "after", "before", "during", "from", "about", "into", "by", "fan", "huge", "big", "massive",
               "strongly", "really", "absolutely", "truly", "deeply", "firmly", "generally", "typically",
               "definitely", "especially", "exclusively", "solely", "strictly", "mostly", "totally", "highly",
               "extremely", "severely", "actually", "honestly", "genuinely", "particularly", "seriously", "mainly",
               "now", "forward", "future", "going", "ever", "please"}


# What a constraint's name keeps: its negation is what it says ("User's constraint: can't eat gluten",
# not "…: eat gluten", which reads as the opposite).
_CONSTRAINING = {"can't", "cannot", "don't", "doesn't", "won't", "not", "no", "never", "avoid", "avoids", "refuse",
                 "refuses"}


def topic_name(subject: str, category: str, words: list[str], label: str | None = None) -> str:
    """The name of a `topic` anchor: whose, which kind of statement (`label`, by default the
    category), and up to three of its content words ("User's health: asthma", "User's habit: cello
    community orchestra")."""
    keep = _CONSTRAINING if category in ("constraint", "change") else set()
    naming = [w for w in words if w.lower() not in _NOT_NAMING or w.lower() in keep]
    about = " ".join(naming[:3])
    label = label or category
    return f"{subject}'s {label}: {about}" if about else f"{subject}'s {label}"


def _own_words(span: str) -> tuple[str, str]:
    """A user's standing statement in their own words, and a title that is its opening.

    A task the user sends later is in the first person too ("What can I include in my diet?"):
    rewritten as "User dislikes fish", the statement's cosine to it drops by about 0.09 on PrefEval
    (median 0.37 -> 0.28; its keyword title costs 0.03 more), which is the margin between the
    preference a task needs and the noise of a store's other memories. Said by the user in their
    own store, "I" is the user; the title is the body's opening, so it is not embedded twice.
    """
    text = span.strip().rstrip(" !,;")
    text = text[:1].upper() + text[1:]
    if not text.endswith((".", "?")):
        text += "."
    return text, _opening(text)


def _opening(text: str) -> str:
    """A title that is the statement's opening ("User's sister Anna lives in Lisbon.", not the
    keywords "Sister Anna lives Lisbon"): read in a list, it says what the memory says, and it is
    not embedded a second time (models.passage_text leaves out a title the body opens with)."""
    return text if len(text) <= 72 else text[:72].rsplit(" ", 1)[0] + "…"


def relations(facts: list[GraphFact], subject: str) -> tuple[RelationSpec, ...]:
    """The statement's graph facts as relations (the user's anchor named `subject`)."""
    def name(e) -> str:
        if e.name == USER:
            return subject
        return subject + e.name[len(USER):] if e.name.startswith(USER + "'s ") else e.name  # "Dana's sister"
    return tuple(RelationSpec(f.relation, name(f.target), f.target.kind, source=name(f.source),
                              source_type=f.source.kind, exclusive=f.exclusive) for f in facts)


def ties_of(text: str) -> tuple[tuple[RelationSpec, ...], Entity | None]:
    """What a memory's text says of people, places and organisations, about the user: its relations
    and the one it is mainly about (its anchor when it has none of its own), as a stored memory
    feeds the graph ("My sister Anna lives in Lisbon.": sister, lives_in; about Anna)."""
    facts = graph_facts(text) if isinstance(text, str) else []
    return relations(facts, USER), main_entity(facts)


_ABOUT_HEALTH = re.compile(rf"\b(?:{WHAT_SOMEONE_IS}|lactose|gluten|pescatarian|allerg(?:y|ies))\b", re.I)


def extract(turns: list[tuple[int, str]], subject: str = "User", subject_kind: str = "user", *,
            own_words: bool = True, group: str | None = None) -> list[Proposal]:
    """Proposals from (turn index, user text) pairs: one per statement, most confident first.

    `group` is whose "our" is (person.third_person): a team session's, not the speaker's.

    With `own_words` (a personal session: the store is the speaker's own), a standing statement
    keeps the user's first-person words (`_own_words`); without it (a team session, whose memories
    other people read), "I" would not say who, so it is written about `subject` as any other fact.

    A statement that names people, places, organisations or memberships hangs on the anchor of
    what it is about (entities.main_entity: "Anna", typed person) and carries its graph facts as
    relations; any other hangs on a `topic` anchor of its own words (the category is a facet).
    """
    out: list[Proposal] = []
    seen: set[str] = set()
    for turn, text in turns:
        for st in statements(text, turn, subject, group):
            key = st.fact.lower()
            if key in seen:
                continue
            seen.add(key)
            words = _key_words(st.fact, subject)
            content = st.fact
            title = _opening(content)
            if st.own and subject_kind == "user" and own_words:
                content, title = _own_words(st.own)
            facts = graph_facts(st.text)
            about = main_entity(facts)
            if st.category == "rename":
                anchor, anchor_type = renamed(st.text)[1], "person"
            elif about is not None:
                anchor, anchor_type = about.name, about.kind
            else:
                # a change with nothing to go into is named by what it is about: "User's health: not
                # allergic shellfish" (the Anchors page read "User's change: …")
                health = st.category == "change" and _ABOUT_HEALTH.search(st.fact)
                anchor = topic_name(subject, st.category, words, label="health" if health else None)
                anchor_type = "topic"
            out.append(Proposal(
                memory_class=st.memory_class, title=title[:1].upper() + title[1:], content=content,
                anchor=anchor, anchor_type=anchor_type, aliases=(" ".join(words[:3]),),
                facets=(st.category, subject_kind), relations=relations(facts, subject),
                confidence=st.confidence, subject_kind=subject_kind, subject=subject, recall_mode=None,
                turns=(turn,),
            ))
    out.sort(key=lambda p: -p.confidence)
    return out
