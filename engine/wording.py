"""How Keepmind's numbers and codes read in what it says: a count ("1 memory", "2 memories", "0
edges") and a curation reason ("tombstone": "refused: this claim was deleted as wrong"), one
rule for the CLI, the pages, the API and the engine's own messages."""

from __future__ import annotations


def counted(n: int, noun: str) -> str:
    if n == 1:
        return f"{n} {noun}"
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return f"{n} {noun[:-1]}ies"
    return f"{n} {noun}{'es' if noun.endswith('s') else 's'}"


# Curation's reason codes (engine/writepath/curation.py, checkpoints.py) in a person's words; the
# page keeps the code in a tooltip for whoever reads the logs.
_REASONS = {
    "secret": "blocked: it held secret-like content",
    "low_confidence": "dropped: too uncertain to keep",
    "empty": "dropped: it said nothing",
    "ephemeral": "dropped: true only for the moment",
    "policy": "dropped: this scope keeps no such memory",
    "record": "kept as a record",
    "no_nominee": "new: no memory said anything like it",
    "update_target_unknown": "new: the model named a memory that does not exist",
    "model_create": "new: the model found nothing it belongs with",
    "model_create_same_anchor": "added to the memory on the same subject",
    "model_skip": "not kept: the model found it already said",
    "model_update": "merged into this memory by the model",
    "model_consolidate": "merged with related memories by the model",
    "already_in_document": "not kept: the memory already says it",
    "contained": "not kept: already said",
    "duplicate": "not kept: already said word for word",
    "tombstone": "refused: this claim was deleted as wrong",
    "merge_without_body": "added to this memory (the model's merge came without its text)",
}
_WITHOUT_MODEL = {"no_llm": "no LLM is configured", "llm_failed": "the LLM failed",
                  "llm_no_decision": "the LLM gave no decision"}


def reason_words(code: str | None) -> str:
    """A curation reason as a person reads it ("no_llm_same_anchor_append" -> "added to the memory
    on the same subject (no LLM is configured)"); text that is no code passes as it is."""
    code = code or ""
    if code in _REASONS:
        return _REASONS[code]
    if code.startswith("merge_guard_failed:"):
        lost = code.split(":", 1)[1].strip()
        return f"added to this memory: the model's merge would have lost what it said ({lost})"
    if code.startswith("curation:"):
        return {"update": "merged by curation", "consolidate": "consolidated by curation",
                "append": "added to by curation"}.get(code.split(":", 1)[1], code)
    for why, words in _WITHOUT_MODEL.items():
        if code == f"{why}_same_anchor_append":
            return f"added to the memory on the same subject ({words})"
        if code == f"{why}_nominee_create":
            return f"new ({words})"
    return code


# Without a model's decision the rules keep a proposal, never merging destructively (curation's
# _conservative): what they did, and why no model decided, said as one sentence's end.
_RULES_DID = {"nominee_create": "kept as a new memory", "same_anchor_append": "added to the memory on the same subject"}
_NO_DECISION = {"no_llm": "no curation LLM is configured", "llm_failed": "the curation LLM failed",
                "llm_no_decision": "the curation LLM gave no decision"}


def outcome_words(code: str | None) -> str:
    """What curation made of a proposal, to end a sentence ("Retried “Laptop”: …"): "kept as a new
    memory (the curation LLM failed, so the rules decided)" for a decision the rules made, else
    "curated — " and the reason in words. It read "curated (new (the LLM failed))"."""
    for why, words in _NO_DECISION.items():
        for did, done in _RULES_DID.items():
            if code == f"{why}_{did}":
                return f"{done} ({words}, so the rules decided)"
    return f"curated — {reason_words(code)}" if code else "curated"


__all__ = ["counted", "outcome_words", "reason_words"]
