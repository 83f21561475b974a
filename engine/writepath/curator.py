"""The curator prompt (netclaw's "balanced" decider, netclaw-facts §4) and its reply parser.

The model sees the proposal and the nominated memories in full and answers with exactly one of
SKIP, UPDATE <id>, CONSOLIDATE <id> [<id>...] or CREATE; UPDATE and CONSOLIDATE add a line of
dashes and the complete merged body. The merged body is then checked by the merge guard.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..clock import iso

PROMPT_VERSION = "curator-balanced-v1"
MAX_BODY_CHARS = 4000

SYSTEM = """You curate a long-term memory. Decide what to do with one PROPOSED memory given EXISTING
CANDIDATES that may say the same thing.

Test: if a candidate states the same underlying fact about the same entity, merge. If it differs in
date, reading, event, entity, metric or time, keep them separate (CREATE). When unsure, CREATE.
Dated series (prices, measurements, weekly status) are append-only: keep every dated value.

Answer with exactly one of these first lines and nothing else before it:
SKIP                          the proposal adds nothing the candidates do not already say
CREATE                        the proposal is a new, separate memory
UPDATE <memory_id>            the proposal updates that one candidate
CONSOLIDATE <id> [<id> ...]   the proposal and these candidates are one fact

After UPDATE or CONSOLIDATE write a line `---` and then the complete merged body: a lossless
union of the sources, newest value first, every superseded dated value kept inline as
"previously <old value>, as of <date>". Keep every number, date, name, URL and identifier.
Do not explain your answer."""


@dataclass(frozen=True)
class CuratorChoice:
    action: str  # skip | create | update | consolidate
    targets: tuple[str, ...]
    body: str | None


def build_prompt(proposal_title: str, proposal_content: str, anchor: str | None, now_ms: int,
                 candidates: list[dict]) -> str:
    """The user message: PROPOSED then EXISTING CANDIDATES (ids verbatim, bodies in full)."""
    lines = ["PROPOSED",
             f"anchor: {anchor or '-'}",
             f"title: {proposal_title}",
             f"timestamp: {iso(now_ms)}",
             "content:",
             proposal_content[:MAX_BODY_CHARS],
             "",
             "EXISTING CANDIDATES"]
    if not candidates:
        lines.append("none")
    for i, cand in enumerate(candidates, 1):
        lines += [f"[{i}] id={cand['id']} anchor={cand.get('anchor') or '-'} "
                  f"updated={iso(cand['updated_at'])}",
                  f"title: {cand['title']}",
                  cand["body"][:MAX_BODY_CHARS],
                  ""]
    return "\n".join(lines).rstrip() + "\n"


_ID = re.compile(r"\b(?:doc|rec)-[0-9a-f]{32}\b")


def parse_choice(text: str) -> CuratorChoice | None:
    """Parse a cleaned reply; None when it names no valid action."""
    if not text or not text.strip():
        return None
    lines = text.strip().splitlines()
    # the keyword line: the first non-empty line, tolerating markdown emphasis
    head_index = next((i for i, ln in enumerate(lines) if ln.strip()), 0)
    head = lines[head_index].strip().strip("*_`# ").upper()
    body = None
    for i in range(head_index + 1, len(lines)):
        if re.fullmatch(r"\s*-{3,}\s*", lines[i]):
            body = "\n".join(lines[i + 1:]).strip() or None
            break
    ids = tuple(dict.fromkeys(_ID.findall(lines[head_index].lower())))
    for action in ("SKIP", "CREATE", "UPDATE", "CONSOLIDATE"):
        if head.startswith(action):
            if action in ("UPDATE", "CONSOLIDATE") and not ids:
                return None
            return CuratorChoice(action.lower(), ids if action in ("UPDATE", "CONSOLIDATE") else (),
                                 body if action in ("UPDATE", "CONSOLIDATE") else None)
    return None
