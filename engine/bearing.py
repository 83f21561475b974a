"""What a memory bears on whatever a task's words: a diet on every task about food, what the user
drives on every task about their car, an allergy to animals on every task about choosing a pet, how
the user flies on every flight.

"Suggest a family dinner for tonight." must not ignore "I'm gluten intolerant.", and "What are some
must-try local dishes in Tokyo?" must not ignore "I am vegan and avoid all animal products.". Such
a task and the diet it needs rarely share a word, and the embedder puts them far apart, so neither
a channel nor the gate finds it: on PrefEval's dietary topic the needed preference was injected for
1 question in 24, and was not among the top five for 9 of the 23 it missed.

So a task (stance.asks_for_help) that names food or drink gets the scope's diet statements, closest
to the message first, after the gate's own choices and inside the same item and character budgets
(recall/decide.py). A document's bearing is worked out from its text whenever the text is written,
as its fingerprint is (store.py, importrows.py; migration 017 for the documents stored before), and
kept in `memory_documents.bears_on`, whose partial index holds only the documents that bear on
something: reading them by their words instead (FTS5 over the diet's and eating's words) cost
a food task 48 ms at 100,000 memories. A diet statement is
a standing statement that limits what someone eats or drinks: an allergy or an intolerance, a diet
(vegan, keto, low-FODMAP, halal), or an aversion, refusal or limit bearing on food ("I don't eat
beef.", "I'm trying to cut down on caffeine."). A liking is not one ("I love sushi." bears on
some food tasks and not others; the gate decides about it as about anything else).

The same holds of the user's vehicle ("My car is making a rattling noise, what should I check?"
needs "User drives a 2019 Toyota Yaris.", with no word in common), of an allergy to animals
("Recommend a good pet for a small flat." needs "I'm allergic to cats.") and of how the user flies
("Book me a flight to Berlin next week." needs "My home airport is Boston Logan."). A memory bears
on one thing at most.

These are the only domains recall names, on purpose: a meal that ignores an allergy is harmful, and
a diet bears on every food task whatever the task's words. Everything else stays domain-free
(stance.py). The stored bearing is what these rules said when the text was written: a change to
them needs a migration that works the bearings out again (as 017 did first).
"""

from __future__ import annotations

import re

from .stance import CONDITION, DISLIKING, caution, current_part, negated, standing_and_lasting

FOOD = "food"   # what one eats or drinks

# Food and drink as a task names them. A menu of an app ("the main menu buttons") is not food, and
# a wine or a beer is named as often for a list, a stain or a gift as for drinking.
_FOOD_TASK = re.compile(
    r"\b(?:foods?|dish(?:es)?|cuisines?|recipes?|cook(?:s|ing)?|meals?|dinners?|lunch(?:es)?|breakfasts?|brunch|"
    r"suppers?|snacks?|restaurants?|caf[eé]s?|bistros?|eat(?:s|ing)?|dine|dining|culinary|delicac(?:y|ies)|"
    r"desserts?|takeaways?|takeouts?|picnics?|bak(?:e|es|ing)|grocer(?:y|ies)|barbecue|bbq|cater(?:ing)?|"
    r"drinks?|beverages?|coffee|teas?|smoothies?|protein\s+bars?|street\s+food|feast|potluck|lunchbox(?:es)?|"
    r"(?<!main\s)(?<!context\s)(?<!start\s)(?<!settings\s)(?<!dropdown\s)menus?(?!\s+(?:bar|button|item|screen|entr)))\b",
    re.I)
# Writing about food is not eating it ("Write a limerick about coffee.").
_WRITING_ABOUT = re.compile(
    r"\b(?:poem|limerick|haiku|sonnet|song|lyrics|story|joke|rap|verse|essay)s?\s+(?:about|on)\b", re.I)
# What a diet statement is about: eating and drinking, and what is eaten or drunk. A diet by name
# counts said of someone ("I'm vegan.", "a strict keto diet"), not of a product ("vegan cosmetics").
_EATING = ("eat", "eats", "eating", "ate", "drink", "drinks", "drinking", "food",
           "foods", "meal", "meals", "dish", "dishes", "diet", "cuisine", "flavors", "flavours", "snacks", "cook",
           "cooking", "caffeine", "alcohol", "sugar", "sweets", "carbs", "gluten", "dairy", "lactose", "meat", "beef",
           "pork", "chicken", "seafood", "shellfish", "fish", "nuts", "peanuts", "peanut", "soy", "eggs", "spicy")
_DIETS = ("vegan", "vegetarian", "pescatarian", "keto", "ketogenic", "paleo", "coeliac", "celiac", "halal", "kosher",
          "plant-based", "fodmap")
_ATE = re.compile(r"\b(?:" + "|".join(_EATING) + r")\b", re.I)
_A_DIET = re.compile(r"\b(?:i'm|im|i\s+am|am|is|are|be|been|being|an?|strict|avid|fully|mostly|strictly|as)\s+(?:"
                     + "|".join(re.escape(d) for d in _DIETS) + r")\b|\b(?:" + "|".join(re.escape(d) for d in _DIETS)
                     + r")\s+(?:diet|lifestyle|food|meals?|options)\b", re.I)
# What one can be allergic to that is not eaten.
_NOT_EATEN = re.compile(r"\b(?:pollen|dust|mites?|cats?|dogs?|animals?|pets?|fur|dander|horses?|feathers?|hamsters?|"
                        r"turtles?|tortoises?|reptiles?|snakes?|lizards?|guinea\s+pigs?|ferrets?|parrots?|"
                        r"penicillin|antibiotics?|"
                        r"medications?|medicines?|drugs?|latex|bees?|wasps?|stings?|grass|hay|mou?ld|perfumes?|"
                        r"fragrances?|nickel|sun|sunlight|detergents?|wool)\b", re.I)
_AVERSION = re.compile(rf"\b(?:{DISLIKING})\b", re.I)
_CONDITION = re.compile(rf"\b(?:{CONDITION})\b", re.I)
# The user's vehicle, in a task ("My car is making a rattling noise.") and in a memory ("User drives a
# 2019 Toyota Yaris.", "Our van is a Ford Transit."): the two rarely share a word.
_VEHICLES = ("car", "van", "truck", "vehicle", "motorbike", "motorcycle", "scooter", "suv", "pickup", "lorry",
             "campervan", "motorhome", "minivan", "ute", "jeep")
_VEHICLE = "(?:" + "|".join(_VEHICLES) + ")s?"
_MY_VEHICLE = re.compile(rf"\b(?:my|our)\s+(?:[\w-]+\s+)?{_VEHICLE}\b", re.I)
_DRIVES = re.compile(r"\b(?:i|we|user|user\s+and\s+others)\s+(?:\w+ly\s+|still\s+|now\s+|also\s+)*"
                     r"(?:drive|drives|ride|rides|lease|leases)\s+(?:an?\s+|the\s+|my\s+|our\s+)?(?:(?:19|20)\d\d\s+)?"
                     r"(?-i:[A-Z])|" + rf"\b(?:my|our|user's)\s+(?:[\w-]+\s+)?{_VEHICLE}\s+is\s+an?\s+", re.I)
VEHICLE = "vehicle"
# An allergy to animals bears on every task about a pet: "Recommend a good pet for a small flat." and
# "Find a pet-friendly cottage for the weekend." need "I'm allergic to cats.".
PETS = "pet"
_ANIMALS = re.compile(r"\b(?:cats?|dogs?|animals?|pets?|fur|dander|horses?|rabbits?|hamsters?|guinea\s+pigs?|"
                      r"birds?|feathers?|turtles?|tortoises?|reptiles?|snakes?|lizards?|ferrets?|parrots?)\b", re.I)
_PET_TASK = re.compile(r"\b(?:pets?|pet-friendly|puppy|puppies|kittens?|dogs?|cats?|adopt(?:ing|ion)?|"
                       r"dog-friendly|cat\s+caf[eé]|petting\s+zoo|shelter)\b", re.I)
# A task about the user's own pet is about that pet ("How do I calm my dog during fireworks?").
_MY_PET = re.compile(r"\b(?:my|our)\s+(?:[\w-]+\s+)?(?:pets?|puppy|kitten|dogs?|cats?)\b", re.I)
# What the user flies with and how bears on every task about a flight: "Book me a flight to Berlin
# next week." needs "My home airport is Boston Logan." and "I'm afraid of flying." as much as the seat.
FLIGHT = "flight"
_FLIGHT_TASK = re.compile(r"\b(?:flights?|fly|flying|airports?|airlines?|planes?|boarding\s+pass|layovers?|red-eye)\b",
                          re.I)
# Words of flying itself, and of a seat, which can be a plane's or a train's.
_PLANE_WORDS = ("fly", "flying", "flies", "flight", "flights", "airport", "airports", "airline", "airlines", "plane",
                "planes", "flyer", "layover", "layovers", "lounge", "precheck")
_SEAT_WORDS = ("aisle", "legroom")
_PLANE = re.compile(r"\b(?:" + "|".join(_PLANE_WORDS) + r"|red-eye)\b", re.I)
_FLYING = re.compile(r"\b(?:" + "|".join((*_PLANE_WORDS, *_SEAT_WORDS)) + r"|window\s+seats?|business\s+class|"
                     r"red-eye)\b", re.I)
# A seat on a train or at a concert is no flight's ("I prefer aisle seats on trains.").
_ELSEWHERE = re.compile(r"\b(?:trains?|rail|bus|buses|coach|ferry|ferries|boats?|cinema|theat(?:re|er)|concerts?|"
                        r"stadium)\b", re.I)
# A frequent-flyer programme, by the words its name or a statement of it holds: "I'm a United
# MileagePlus Gold member." bears on every flight as the home airport does.
_FLYER_WORDS = ("mileageplus", "skymiles", "aadvantage", "avios", "krisflyer", "aeroplan", "trueblue", "miles")
_FLYER = re.compile(r"\b(?:frequent[\s-]fl(?:y|i)er|flying\s+blue|executive\s+club|rapid\s+rewards|"
                    + "|".join(_FLYER_WORDS[:-1]) + r")\b"
                    # a programme named by its Miles ("Asia Miles", "Miles & More"), not a distance
                    r"|(?-i:\b[A-Z]\w+\s+Miles\b|\bMiles\s*(?:&|and)\s*More\b)", re.I)
_MEMBER = re.compile(r"\b(?:member|membership|status|elite|gold|silver|platinum|diamond|premier|medallion|card|"
                     r"number|account|points)\b", re.I)
_ABOUT_THE_USER = re.compile(r"\b(?:i|i'm|i've|my|me|we|our|user|user's)\b", re.I)
# Words one of which every statement that bears on something holds: migration 017 reads only the
# documents FTS5 finds by them.
WORDS = (*_EATING, *_DIETS, "allergic", "allergy", "allergies", "allergen", "allergens", "intolerant", "intolerance",
         "anaphylaxis", "anaphylactic", "drive", "drives", "ride", "rides", "lease", "leases", *_VEHICLES,
         *_PLANE_WORDS, *_SEAT_WORDS, "window", *_FLYER_WORDS, "flyer", "flier", "blue", "club", "rewards")
# What a person reads on a memory's page of why recall gives it to tasks that share no word with it.
TASKS = {FOOD: "every task about food or drink (a diet)", VEHICLE: "every task about the user's car or van",
         PETS: "every task about a pet (an allergy to animals)", FLIGHT: "every task about a flight"}
BEARING_READ = 20   # documents read per bearing and task; the item budget keeps at most a few


def task_bears_on(message: str, task: bool) -> str | None:
    """What a task message is about that memories bear on whatever its words (FOOD, VEHICLE, PETS, FLIGHT), or
    None."""
    message = message or ""
    if not task or _WRITING_ABOUT.search(message):
        return None
    if _FOOD_TASK.search(message):
        return FOOD
    if _MY_VEHICLE.search(message):
        return VEHICLE
    if _FLIGHT_TASK.search(message):
        return FLIGHT
    return PETS if _PET_TASK.search(message) and not _MY_PET.search(message) else None


def bears_on(text: str) -> str | None:
    """What a memory's current text bears on whatever a task's words (VEHICLE when it says what the
    user drives, FLIGHT how they fly, FOOD when it limits what someone eats or drinks, PETS an
    allergy to animals), or None."""
    text = current_part(text or "").replace("’", "'")
    is_standing, lasting = standing_and_lasting(text)
    if _DRIVES.search(text) and not negated(text) and lasting:
        return VEHICLE
    if caution(text):
        if not _NOT_EATEN.search(text) or _ATE.search(text):
            return FOOD
        return PETS if _ANIMALS.search(text) else None
    if _FLYER.search(text) and _MEMBER.search(text) and lasting and _ABOUT_THE_USER.search(text) \
            and not negated(text):
        return FLIGHT
    if (_FLYING.search(text) and lasting and _ABOUT_THE_USER.search(text)
            and (_PLANE.search(text) or not _ELSEWHERE.search(text))):
        return FLIGHT
    # an aversion, a refusal or a limit; or a condition not said not to hold ("I'm not allergic to shellfish.")
    limits = bool(_AVERSION.search(text)) or (bool(_CONDITION.search(text)) and not negated(text))
    return FOOD if limits and is_standing and (_ATE.search(text) or _A_DIET.search(text)) else None
