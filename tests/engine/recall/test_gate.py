"""The offline feature gate's parts, on hand-made candidates: features, the query model, decisions."""

import math

from keepmind.engine.recall.gate import (
    FEATURES,
    QUERY_FEATURES,
    FeatureGateParams,
    decide,
    feature_gate,
    features,
    query_features,
    query_score,
)
from keepmind.engine.recall.plan import plan
from keepmind.engine.recall.rank import Candidate, Ranked
from keepmind.engine.recall.terms import TermStats

MEMORIES = {
    "airport": ("Home airport", "The user flies out of Boston Logan, their home airport."),
    "grinder": ("Grinder", "Grinds espresso beans with a Baratza grinder every morning."),
    "editor": ("Editor", "Prefers dark mode in the code editor."),
}


def _stats() -> TermStats:
    stats = TermStats()
    for mid, (title, body) in MEMORIES.items():
        stats._add(mid, title, body)
    return stats


def _ranked(mid: str, cosine: float, lexical: float = 0.0, lexical_rank: int | None = None) -> Ranked:
    title, body = MEMORIES[mid]
    return Ranked(Candidate(mid, {"title": title, "body": body}, cosine, lexical, lexical_rank=lexical_rank),
                  cosine, ())


def _params(**kw) -> FeatureGateParams:
    base = dict(weights=(0.0,) * len(FEATURES), bias=0.0, item_threshold=0.0, query_threshold=0.0)
    return FeatureGateParams(**{**base, **kw})


def test_the_query_bar_refuses_everything_then_items_need_their_own_and_a_share_of_the_best():
    ids = ["a", "b", "c"]
    assert not any(d.kept for d in decide([0.9, 0.5, 0.1], ids, 0.0, 0.5, query=0.4))
    kept = decide([0.9, 0.5, 0.1], ids, 0.2, 0.5, query=0.6)
    assert [d.kept for d in kept] == [True, True, False] and kept[2].reason.startswith("item below threshold")
    relative = decide([0.9, 0.5, 0.1], ids, 0.0, 0.5, query=0.6, relative=0.6)
    assert [d.kept for d in relative] == [True, False, False]
    assert relative[1].reason.startswith("item far below the best")
    # without a query score the best item's score is the query score (older calibrations)
    assert [d.kept for d in decide([0.4, 0.3], ["a", "b"], 0.0, 0.5)] == [False, False]


def test_known_share_is_the_part_of_the_messages_rare_content_the_store_holds():
    stats = _stats()
    top = [_ranked("airport", 0.6)]
    about_store = query_features(plan("Which airport is my home?"), top, stats, [1.0])
    elsewhere = query_features(plan("Tell me about volcanic sediment chemistry"), top, stats, [1.0])
    half = query_features(plan("Boston volcanoes"), top, stats, [1.0])
    assert about_store["known"] == 1.0 and elsewhere["known"] == 0.0 and 0.0 < half["known"] < 1.0
    assert about_store["best"] == 1.0 and about_store["max_cosine"] == 0.6
    assert about_store["terms"] == math.log1p(len(plan("Which airport is my home?").content))
    assert set(about_store) == set(QUERY_FEATURES)


def test_item_features_read_phrases_ranks_and_the_candidates_standing_in_the_ranking():
    stats = _stats()
    p = plan("Where is my home airport?")
    top = [_ranked("airport", 0.7, 12.0, 1), _ranked("grinder", 0.3)]
    context = top + [_ranked("editor", 0.1)] * 4
    airport, grinder = features(p, top, stats, context)
    assert set(airport) == set(FEATURES)
    assert airport["phrase"] == 1.0 and grinder["phrase"] == 0.0       # "home airport" as a phrase
    assert airport["covered_terms"] == 2.0 and grinder["covered_terms"] == 0.0
    assert airport["cosine_rank"] == 0.0 and grinder["cosine_rank"] == 1.0
    assert airport["cosine_z"] > 0 > -1 < grinder["cosine_z"] < airport["cosine_z"]
    assert abs(airport["cosine_over_4th"] - (0.7 - 0.1)) < 1e-9
    assert airport["lexical_rank"] == 0.1 and grinder["lexical_rank"] == 5.0   # not found: rank 50
    assert airport["gap_to_best"] == 0.0 and abs(grinder["gap_to_best"] - 0.4) < 1e-9


def test_the_query_model_decides_before_any_item_and_its_score_is_in_the_receipt_features():
    stats = _stats()
    top = [_ranked("airport", 0.7), _ranked("grinder", 0.3)]
    known_only = tuple(1.0 if f == "known" else 0.0 for f in QUERY_FEATURES)
    gate = _params(query_weights=tuple(20 * w for w in known_only), query_bias=-10.0, query_threshold=0.5)
    on_topic = feature_gate(gate, plan("Where is my home airport?"), top, stats)
    off_topic = feature_gate(gate, plan("volcanic sediment chemistry"), top, stats)
    assert all(d.kept for d in on_topic) and on_topic[0].features["query_score"] > 0.99
    assert not any(d.kept for d in off_topic) and off_topic[0].reason.startswith("query below bar")


def test_calibrations_round_trip_and_older_ones_without_a_query_model_still_load():
    gate = _params(weights=tuple(float(i) for i in range(len(FEATURES))), bias=-1.0, item_threshold=0.01,
                   query_threshold=0.1, query_weights=(0.5,) * len(QUERY_FEATURES), query_bias=-2.0, relative=0.05)
    again = FeatureGateParams.from_calibration({"feature_gate": gate.as_calibration()}, source="default")
    assert again == gate
    old = {"feature_gate": {"weights": {"cosine": 2.0}, "bias": -1.0, "item_threshold": 0.1, "query_threshold": 0.2}}
    loaded = FeatureGateParams.from_calibration(old)
    assert loaded.query_weights is None and loaded.relative == 0.0
    assert loaded.weights[FEATURES.index("cosine")] == 2.0 and loaded.weights[FEATURES.index("phrase")] == 0.0
    assert query_score(loaded, {}, [0.3, 0.7]) == 0.7
    assert FeatureGateParams.from_calibration({"feature_gate": {"weights": {}}}) is None


def test_a_memorys_aliases_and_facets_count_as_its_words():
    stats = TermStats()
    stats._add("airline", "Delta SkyMiles Gold", "Prefers Delta or KLM flights.", "SkyMiles\nDelta", "travel\nairline")
    assert stats.holds("airlin") and not stats.holds("volcano")
    row = {"title": "Delta SkyMiles Gold", "body": "Prefers Delta or KLM flights.", "aliases": "SkyMiles\nDelta",
           "facets": "travel\nairline"}
    top = [Ranked(Candidate("airline", row, 0.3, 0.0), 0.3, ())]
    [with_facets] = features(plan("Which airline do I prefer?"), top, stats)
    bare = {**row, "facets": ""}
    [without] = features(plan("Which airline do I prefer?"), [Ranked(Candidate("airline", bare, 0.3, 0.0), 0.3, ())],
                         stats)
    assert with_facets["covered_terms"] == without["covered_terms"] + 1 and with_facets["coverage"] > without["coverage"]


def test_task_messages_are_decided_by_a_gate_of_their_own():
    from dataclasses import replace

    stats = _stats()
    pref = Ranked(replace(_ranked("editor", 0.3).candidate, standing=True, for_task=True), 0.3, ())
    gate = _params(query_threshold=0.9, task=_params(query_threshold=0.2))  # questions need 0.9, tasks 0.2
    assert all(d.kept for d in feature_gate(gate, plan("Set up my editor for me."), [pref], stats))
    question = Ranked(replace(pref.candidate, for_task=False), 0.3, ())
    assert not any(d.kept for d in feature_gate(gate, plan("Which editor theme was it?"), [question], stats))
    assert not any(d.kept for d in feature_gate(replace(gate, task=None), plan("Set up my editor for me."),
                                                  [pref], stats))
    kept = feature_gate(gate, plan("Set up my editor for me."), [pref], stats)
    assert kept[0].reason == "kept by the task gate"
    # a task message keeps what the question gate keeps too
    both = _params(query_threshold=0.2, task=_params(query_threshold=0.9))
    assert all(d.kept and d.reason == "kept" for d in feature_gate(both, plan("Set up my editor for me."), [pref], stats))
    again = FeatureGateParams.from_calibration({"feature_gate": gate.as_calibration()}, source="default")
    assert again == gate and again.task.query_threshold == 0.2 and again.query_threshold == 0.9


def test_task_features_read_the_standing_statement_and_the_part_it_matched():
    from dataclasses import replace

    stats = _stats()
    p = plan("Grind some beans for me. Also, where is my home airport?")
    airport = Ranked(replace(_ranked("airport", 0.6).candidate, segment=2, for_task=False), 0.6, ())
    grinder = Ranked(replace(_ranked("grinder", 0.4).candidate, segment=1, for_task=True, standing=True), 0.4, ())
    f_air, f_grind = features(p, [airport, grinder], stats)
    assert (f_air["task"], f_air["task_standing"]) == (0.0, 0.0)
    assert (f_grind["task"], f_grind["task_standing"], f_grind["task_standing_cosine"]) == (1.0, 1.0, 0.4)
    # each is covered against its own sentence: the airport memory covers "home airport"
    assert f_air["coverage"] > 0.5 and f_grind["coverage"] > 0.0
    q = query_features(p, [airport, grinder], stats, [3.0, -1.0])
    assert q["task"] == 0.0 and q["task_standing_cosine"] == 0.4   # the best item matched the question part


def test_a_task_messages_standing_statement_well_above_the_others_stands_out():
    from dataclasses import replace

    stats = _stats()
    p = plan("Can you recommend a coffee grinder for me?")

    def standing(mid, cosine, for_task=True, standing=True):
        return Ranked(replace(_ranked(mid, cosine).candidate, for_task=for_task, standing=standing), cosine, ())
    head = [standing("grinder", 0.6), standing("editor", 0.2), standing("airport", 0.2), standing("editor", 0.2)]
    f_grind, f_editor = features(p, head[:2], stats, context=head)
    assert f_grind["task_standing_z"] > 1.5 and f_editor["task_standing_z"] < 0
    assert query_features(p, head[:2], stats, [1.0, -1.0], head)["task_standing_z"] == f_grind["task_standing_z"]
    # alike standing statements do not stand out, and neither does a memory that is not one
    alike = [standing("grinder", 0.3), standing("editor", 0.3), standing("airport", 0.3)]
    assert features(p, alike[:1], stats, context=alike)[0]["task_standing_z"] == 0.0
    fact = standing("grinder", 0.6, standing=False)
    assert features(p, [fact], stats, context=[fact, *head[1:]])[0]["task_standing_z"] == 0.0
    # fewer than three standing statements to compare with: no reading
    assert features(p, head[:2], stats, context=head[:2])[0]["task_standing_z"] == 0.0


def test_a_task_messages_standing_statements_have_a_floor_of_their_own():
    from dataclasses import replace

    from keepmind.engine.recall.gate import above_floor

    low = _ranked("grinder", 0.15).candidate
    assert not above_floor(low, 0.24)
    assert not above_floor(low, 0.24, 0.1)                        # not a standing statement of a task message
    assert above_floor(replace(low, for_task=True, standing=True), 0.24, 0.1)
    assert not above_floor(replace(low, for_task=True, standing=True), 0.24, 0.2)
    assert not above_floor(replace(low, for_task=True, standing=True), 0.24)   # no task floor calibrated
    assert above_floor(replace(low, cosine=None), 0.24)           # no vector: not floored


def test_in_a_store_too_small_to_read_a_standing_statement_chance_would_rarely_score_so_high_is_kept():
    from dataclasses import replace

    from keepmind.engine.recall.gate import Surprise

    stats = _stats()
    p = plan("Can you recommend a coffee grinder for me?")

    def standing(mid, cosine, standing=True):
        return Ranked(replace(_ranked(mid, cosine).candidate, for_task=True, standing=standing), cosine, ())
    rule = Surprise(mean=0.1, sd=0.1, alpha=0.1)
    # the chance grows with the number of standing statements that could have scored as high
    assert rule.chance(0.3, 1) < rule.chance(0.3, 2) < 0.1 < rule.chance(0.3, 20) < 1.0
    assert rule.chance(0.3, 1) == rule.chance(0.3, 0)   # never fewer than the one found
    one = [standing("grinder", 0.3), standing("airport", 0.05, standing=False)]
    assert rule.pick(one, one, seen_all=True) == ("grinder", rule.chance(0.3, 1), 1)
    assert rule.pick(one, one, seen_all=False) is None     # others the candidates did not hold could score higher
    # memories already injected in the session count as standing statements that could have scored higher
    assert rule.pick(one, one, seen_all=True, excluded=1) == ("grinder", rule.chance(0.3, 2), 2)
    assert rule.pick(one, one, seen_all=True, excluded=2) == ("grinder", rule.chance(0.3, 3), 3)
    assert rule.pick(one, one, seen_all=True, excluded=19) is None  # the best of 20 scores that often
    assert rule.pick([standing("grinder", 0.15)], one, seen_all=True) is None   # chance scores that often
    # however many there are, while the store was seen whole: a newcomer's five preferences too
    three = [standing("grinder", 0.3), standing("editor", 0.1), standing("editor", 0.1)]
    assert rule.pick(three, three, seen_all=True) == ("grinder", rule.chance(0.3, 3), 3)
    fact = [standing("airport", 0.9, standing=False)]
    assert rule.pick(fact, fact, seen_all=True) is None     # not a standing statement
    # the task gate's rule keeps what both gates refuse, and says why
    refuse = _params(query_threshold=1.1, task=_params(query_threshold=1.1, surprise=rule))
    [kept, other] = feature_gate(refuse, p, one, stats, context=one, seen_all=True)
    assert kept.kept and kept.reason.startswith("stands out from chance (p=") and not other.kept
    assert not any(d.kept for d in feature_gate(refuse, p, one, stats, context=one))
    question = [Ranked(replace(one[0].candidate, for_task=False), 0.3, ())]
    assert not any(d.kept for d in feature_gate(refuse, plan("Which grinder did I buy?"), question, stats,
                                                context=question, seen_all=True))
    again = FeatureGateParams.from_calibration({"feature_gate": refuse.as_calibration()}, source="default")
    assert again == refuse and again.task.surprise == rule
    # a calibration without the rule, or with an alpha that keeps nothing or everything, has none
    assert FeatureGateParams.from_calibration({"feature_gate": _params(task=_params()).as_calibration()}).task.surprise is None
    assert Surprise.from_calibration({"mean": 0.1, "sd": 0.1, "alpha": 0.0}) is None
    assert Surprise.from_calibration({"mean": 0.1, "sd": 0.1, "alpha": 1.0}) is None
