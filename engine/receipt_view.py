"""A recall receipt as a person reads it: one line per candidate with its score at each stage
(lexical, cosine, fused, the floor, the gate) and what became of it, and why.

Pure: it reads the stored receipt (recall/receipts.py writes it) and nothing else, so an old
receipt reads the same tomorrow.
"""

from __future__ import annotations

STAGE_NAMES = {"floor": "the cosine floor", "gate": "the relevance gate", "budget": "the size budget"}


def _fate(candidate: dict, injected: set[str], dropped: dict[str, dict], gated: set[str], floor,
          joined: dict[str, str]) -> tuple[str, str]:
    """(stage, why) of one considered candidate: where it stopped, or "injected"."""
    cid = candidate.get("id")
    if cid in injected:
        return "injected", joined.get(cid) or "cleared every stage"
    if cid in dropped:
        d = dropped[cid]
        return d.get("stage") or "dropped", d.get("why") or ""
    if cid in gated:
        return "gate", "below the gate's threshold"
    cosine = candidate.get("cosine")
    if floor is not None and cosine is not None and cosine < floor:
        return "floor", f"cosine {cosine:.3f} under the floor {floor:.3f}"
    return "rank", "ranked below the candidates sent to the gate"


def _found_by_common_words(candidate: dict) -> bool:
    """Found by its words with a bm25 of about 0: FTS5 counts a word that half the memories or more
    hold as saying nothing (its IDF is clamped), as every word is in a store of a few memories. The
    share of the message's words it holds (coverage) ranked it; the receipt says so, or "Lexical
    0.000" at rank 1 reads as a match on nothing."""
    lexical = candidate.get("lexical")
    return candidate.get("lexical_rank") is not None and isinstance(lexical, (int, float)) and lexical < 0.0005


def stages(receipt: dict) -> list[dict]:
    """Every considered candidate with its scores and fate, best ranked first."""
    injected = {i.get("id") for i in receipt.get("injected") or []}
    dropped = {d.get("id"): d for d in receipt.get("dropped") or []}
    decisions = (receipt.get("gate") or {}).get("decisions") or []
    gated = {d.get("id") for d in decisions if not d.get("kept")}
    floor = (receipt.get("floor") or {}).get("value")
    # what joined the kept items, and why: a kept item's profile, or what bears on the task (a diet, a food task)
    joined = {c.get("id"): _joined_why(c) for c in receipt.get("companions") or []}
    out = []
    for c in receipt.get("considered") or []:
        stage, why = _fate(c, injected, dropped, gated, floor, joined)
        out.append({
            "rank": c.get("rank"), "id": c.get("id"), "title": c.get("title") or c.get("id"),
            "lexical": c.get("lexical"), "cosine": c.get("cosine"), "fused": c.get("score"),
            "floor": None if floor is None or c.get("cosine") is None else ("pass" if c["cosine"] >= floor else "fail"),
            "gate": c.get("gate"), "stage": stage, "stage_name": STAGE_NAMES.get(stage, stage), "why": why,
            "reasons": c.get("reasons") or [],
            "common_words": _found_by_common_words(c), "erased": bool(c.get("erased")),
        })
    considered = {c.get("id") for c in receipt.get("considered") or []}
    for item in receipt.get("injected") or []:  # a companion joined by its facet, not ranked on its own
        if item.get("id") not in considered:
            out.append({"rank": None, "id": item.get("id"), "title": item.get("title") or item.get("id"),
                        "lexical": None, "cosine": None, "fused": None, "floor": None, "gate": None,
                        "stage": "injected", "stage_name": "injected",
                        "why": joined.get(item.get("id")) or "joined a kept memory (companion)",
                        "reasons": [], "erased": bool(item.get("erased"))})
    return out


def _joined_why(companion: dict) -> str:
    why = companion.get("why") or "joined a kept memory"
    return f"{why} (companion)" if companion.get("with") else f"{why}, whatever the gate said"


def timings(receipt: dict) -> list[tuple[str, float]]:
    """(stage, ms) in the order the pipeline ran them, total last."""
    found = dict(receipt.get("timings_ms") or {})
    total = found.pop("total_ms", None)
    out = [(k.removesuffix("_ms").replace("_", " "), v) for k, v in found.items() if isinstance(v, (int, float))]
    if isinstance(total, (int, float)):
        out.append(("total", total))
    return out


__all__ = ["STAGE_NAMES", "stages", "timings"]
