from dataclasses import replace

import pytest

from keepmind.engine.recall.pipeline import ranking_weights
from keepmind.engine.recall.plan import plan
from keepmind.engine.recall.rank import (
    DEFAULT_COVERAGE_WEIGHT,
    Candidate,
    RankWeights,
    best_segment,
    calibrated_coverage_weight,
    rank,
    squash,
)
from keepmind.engine.recall.stem import stem


def test_conversational_words_are_not_searched():
    p = plan("Ok, can you tell me what that thing about the Berlin marathon was?")
    assert "marathon" in p.terms and "berlin" in p.terms
    for generic in ("ok", "can", "tell", "that", "thing", "what", "the"):
        assert generic not in p.terms
    assert p.terms[0] == "berlin"  # anchors (capitalized names) come first
    assert "berlin" in p.anchors and "ok" not in p.anchors


@pytest.mark.parametrize("message, anchors", [
    ("Suggest a family dinner for tonight.", ()),   # the receipts page listed "suggest" as a name
    ("Book me a flight to Berlin next week.", ("berlin",)),
    ("Plan a trip. Anna wants Lisbon.", ("anna", "lisbon")),
])
def test_the_verb_a_request_opens_with_is_no_name(message, anchors):
    assert plan(message).anchors == anchors


def test_terms_are_capped_and_context_adds_only_anchors():
    p = plan(" ".join(f"word{i}x" for i in range(30)), context=["We talked about Lisbon yesterday"])
    assert len(p.terms) == 12
    assert "lisbon" in p.anchors and "lisbon" not in p.terms


def test_porter_stemming_meets_inflections():
    assert stem("painting") == stem("painted") == stem("paints") == "paint"
    assert stem("ponies") == "poni" and stem("relational") == "relat"
    assert plan("hiking trips").content == (stem("hiking"), stem("trips"))


def _cand(i, cos, lex, cov=0.0):
    return Candidate(i, {"memory_class": "durable_fact", "kind": "document", "updated_at": 0}, cos, lex,
                     coverage=cov)


def test_rankings_differ_and_break_ties_by_id():
    cands = [_cand("b", 0.9, 0.0), _cand("a", 0.2, 30.0), _cand("c", 0.2, 30.0)]
    assert [r.id for r in rank(cands, 0, method="cosine")] == ["b", "a", "c"]
    assert [r.id for r in rank(cands, 0, method="bm25")] == ["a", "c", "b"]
    fused = rank(cands, 0, method="fused")
    assert fused[0].id == "b" and fused[1].id == "a"
    assert any(reason.startswith("cosine=") for reason in fused[0].reasons)


def test_fused_score_is_the_design_formula_and_hybrid_adds_coverage():
    w = RankWeights()
    c = _cand("x", 0.5, 8.0, cov=1.0)
    fused = rank([c], 0, method="fused", weights=w)[0].score
    assert abs(fused - (0.7 * 0.5 + 0.3 * 0.5 + 0.56)) < 1e-9  # squash(8)=0.5, durable merge-document prior
    hybrid = rank([c], 0, method="hybrid", weights=w)[0].score
    assert abs(hybrid - fused - 0.3) < 1e-9
    assert squash(0, 8) == 0 and squash(8, 8) == 0.5


def test_a_memory_without_a_vector_competes_on_its_lexical_score():
    gap = _cand("gap", None, 40.0)
    weak = _cand("weak", 0.1, 0.0)
    assert rank([weak, gap], 0, method="fused")[0].id == "gap"


def test_hybrid_honours_the_coverage_weight_it_is_given():
    similar = _cand("similar", 0.6, 0.0, cov=0.2)      # close in meaning, covers little of the query
    covering = _cand("covering", 0.45, 0.0, cov=1.0)   # less similar, covers every query word
    assert [r.id for r in rank([similar, covering], 0, method="hybrid", weights=RankWeights(coverage=0.0))] \
        == ["similar", "covering"]
    assert [r.id for r in rank([similar, covering], 0, method="hybrid", weights=RankWeights(coverage=0.6))] \
        == ["covering", "similar"]
    at = {w: rank([covering], 0, method="hybrid", weights=RankWeights(coverage=w))[0].score for w in (0.0, 0.6)}
    assert abs(at[0.6] - at[0.0] - 0.6) < 1e-9
    assert RankWeights().coverage == DEFAULT_COVERAGE_WEIGHT == 0.3


def test_the_coverage_weight_comes_from_the_calibration_or_falls_back():
    base = RankWeights()
    assert calibrated_coverage_weight({"ranking": {"coverage_weight": 0.5}}) == 0.5
    for cal in (None, {}, {"ranking": None}, {"ranking": {"coverage_weight": "x"}},
                {"ranking": {"coverage_weight": True}}, {"ranking": {"coverage_weight": -1}}):
        assert calibrated_coverage_weight(cal) is None
    assert ranking_weights(base, {"ranking": {"coverage_weight": 0.1}}) == RankWeights(coverage=0.1)
    assert ranking_weights(base, {"min_cosine": 0.2}) == base  # a calibration without one: 0.3
    assert ranking_weights(base, None) == base                 # lexical-only recall: 0.3


def test_idf_on_a_tiny_store_reads_as_the_smallest_calibrated_store():
    from keepmind.engine.recall.gate import coverage
    from keepmind.engine.recall.terms import TermStats, collection_floor, memory_stems

    stats = TermStats()
    for i, (title, body) in enumerate([("Home airport", "The user flies out of Boston Logan, their home airport."),
                                       ("Grinder", "Grinds espresso with a Baratza."),
                                       ("Editor", "Prefers dark mode.")]):
        stats._add(f"doc-{i}", title, body)
    query = {stem(w) for w in ("airport", "usually", "boston")}
    stems = memory_stems("Home airport", "The user flies out of Boston Logan, their home airport.")
    raw = coverage(stats.weights(query), stems)
    floored = stats.floored(collection_floor({"term_stats": {"min_memories": 169}}))
    assert floored.size == 3
    # 2 of 3 query words held: unfloored, the one unseen word weighs as much as both others
    assert raw < 0.52 < coverage(floored.weights(query), stems)
    assert collection_floor(None) == collection_floor({"term_stats": {"min_memories": "x"}}) == 0
    big = TermStats()
    for i in range(500):
        big._add(f"doc-{i}", "t", f"word{i} airport" if i == 0 else f"word{i}")
    assert big.floored(169).weights(query) == big.weights(query)  # no effect on larger stores


def test_a_message_of_several_topics_gets_one_part_per_sentence():
    p = plan("What coffee should I get this afternoon? Also, I just adopted a greyhound named Pixel.")
    assert p.segments == ("What coffee should I get this afternoon? Also, I just adopted a greyhound named Pixel.",
                          "What coffee should I get this afternoon?", "Also, I just adopted a greyhound named Pixel.")
    assert p.task and p.part(1).task and not p.part(2).task
    assert "coffe" in p.part(1).content and "greyhound" not in p.part(1).content
    assert p.part(0) is p and p.part(9) is p


def test_a_single_sentence_or_a_short_aside_makes_no_parts():
    assert plan("When did Caroline go to the support group?").parts == ()
    # "Thanks!" carries no content: it joins its neighbour, leaving one segment
    assert plan("Thanks! When is my dentist appointment?").parts == ()
    p = plan("Book a table for two. Also remind me to call the bank tomorrow. Then pick a wine.")
    assert len(p.parts) == 3


def test_the_standing_weight_lifts_a_lasting_memory_over_an_episode_only_for_a_task():
    w = RankWeights(standing=0.2)
    pref = replace(_cand("pref", 0.30, 0.0), standing=True, lasting=True, for_task=True)
    episode = replace(_cand("episode", 0.45, 0.0), for_task=True)     # dated to a day
    assert [r.id for r in rank([episode, pref], 0, method="hybrid", weights=w)] == ["pref", "episode"]
    assert any(r.startswith("lasting=") for r in rank([pref], 0, weights=w)[0].reasons)
    question = replace(pref, for_task=False)
    assert [r.id for r in rank([episode, question], 0, method="hybrid", weights=w)] == ["episode", "pref"]
    assert [r.id for r in rank([episode, pref], 0, method="hybrid", weights=RankWeights())] == ["episode", "pref"]
    # a lasting fact that is no preference ("I use Neovim") gets the same lift: the preference does
    # not pass it on the prior alone
    tool = replace(_cand("tool", 0.45, 0.0), lasting=True, for_task=True)
    assert [r.id for r in rank([pref, tool], 0, method="hybrid", weights=w)] == ["tool", "pref"]


def test_task_messages_weigh_coverage_with_their_own_weight():
    w = RankWeights(coverage=0.5, task_coverage=0.0)
    c = _cand("x", 0.5, 0.0, cov=1.0)
    as_question = rank([c], 0, weights=w)[0].score
    as_task = rank([replace(c, for_task=True)], 0, weights=w)[0].score
    assert abs(as_question - as_task - 0.5) < 1e-9
    assert RankWeights(coverage=0.5).coverage_for(True) == 0.5  # no task weight: the coverage weight


def test_a_candidate_is_judged_against_the_part_it_matches_best():
    c = replace(_cand("coffee", 0.20, 0.0), cosines=(0.20, 0.55, 0.05), standing=True)
    judged = best_segment(c, [0.1, 0.6, 0.0], [True, True, False], RankWeights(coverage=0.5))
    assert (judged.segment, judged.cosine, judged.coverage, judged.for_task) == (1, 0.55, 0.6, True)
    # without vectors for the parts, the whole message's cosine stands in
    flat = best_segment(replace(c, cosines=()), [0.0, 0.0, 0.9], [False, False, False], RankWeights())
    assert (flat.segment, flat.cosine, flat.coverage) == (2, 0.20, 0.9)


def test_task_weights_come_from_the_calibration():
    cal = {"ranking": {"coverage_weight": 0.5, "standing_weight": 0.15, "task_coverage_weight": 0.1}}
    assert ranking_weights(RankWeights(), cal) == RankWeights(coverage=0.5, standing=0.15, task_coverage=0.1)
    assert ranking_weights(RankWeights(), {"ranking": {"coverage_weight": 0.5}}).standing == 0.0
