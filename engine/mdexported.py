"""Keepmind's own Markdown export read back as the memories it holds.

engine/transfer.py (markdown_pages) writes a page per anchor: `# name`, the anchor's line and its
edges, then each memory as `## title`, its id, authored and provenance lines, its body as stored,
and (exported `--with-history`) a document's earlier revisions in a <details> block. Read back,
each memory is one unit (its body whole, under its own title and authored time); the anchor,
edges and earlier revisions are listed as left out, as a Markdown import adds no graph (the
JSON Lines export keeps all of it).
Change this module and markdown_pages together.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from .mdunits import TITLE_CHARS, Parsed, Skipped, Unit, cut, has_text, plain

_MEMORY_ID = r"(?:doc|rec)-[0-9a-f]{32}"
EXPORT_MEMORY_RES = (  # the three lines under a memory's `## title` and a blank line
    re.compile(rf"^- id: `{_MEMORY_ID}` · class: \S+ · (?P<audience>\S+) / (?P<boundary>.*)$"),
    re.compile(r"^- authored: (?P<authored>\S+) · created: \S+$"),
    re.compile(r"^- provenance: `.*`$"),
)
EXPORT_ANCHOR_RE = re.compile(r"^_anchor anc-[0-9a-f]{32} · type .+ · .+ / .*_$")
UNANCHORED_PAGE = "# Unanchored memories"
REVISIONS_OPEN = "<details><summary>earlier revisions</summary>"
REVISION_RE = re.compile(r"^\*\*revision \d+\*\* \(\S+\)$")


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _memory_at(lines: list[str], i: int) -> bool:
    """Does an exported memory start at line i (`## title`, a blank line, its id, authored and
    provenance lines)?"""
    return (lines[i].startswith("## ") and i + 4 < len(lines) and not lines[i + 1].strip()
            and all(pattern.match(lines[i + 2 + k]) for k, pattern in enumerate(EXPORT_MEMORY_RES)))


def _page_at(lines: list[str], i: int) -> bool:
    """Does an exported page start at line i (`# name` and its anchor line, or the unanchored page
    and its first memory)?"""
    if not lines[i].startswith("# ") or i + 2 >= len(lines) or lines[i + 1].strip():
        return False
    return bool(EXPORT_ANCHOR_RE.match(lines[i + 2])) or (lines[i].rstrip() == UNANCHORED_PAGE
                                                          and _memory_at(lines, i + 2))


def is_export(text: str) -> bool:
    """Is this a Markdown file `keepmind export --format markdown` wrote (it starts with one of its pages)?"""
    lines = _lines(text.lstrip("\ufeff"))
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    return first is not None and _page_at(lines, first)


def _authored(stamp: str) -> int | None:
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(when.replace(tzinfo=when.tzinfo or timezone.utc).timestamp() * 1000)


def export_units(text: str) -> Parsed:
    """Keepmind's Markdown export as units: one per memory, its body whole; what is not one, listed."""
    lines = _lines(text.lstrip("\ufeff"))
    parsed = Parsed()
    starts = [i for i in range(len(lines)) if _page_at(lines, i) or _memory_at(lines, i)]
    section: tuple[str, ...] = ()
    for start, end in zip(starts, starts[1:] + [len(lines)]):
        if _page_at(lines, start):
            name = lines[start][2:].strip()
            section = () if lines[start].rstrip() == UNANCHORED_PAGE else (name,)
            if EXPORT_ANCHOR_RE.match(lines[start + 2]):
                parsed.skipped.append(Skipped(start + 3, "anchor", cut(name, 80)))
                parsed.skipped += [Skipped(k + 1, "edge", cut(plain(lines[k]), 80))
                                   for k in range(start + 3, end) if lines[k].strip()]
            continue
        body_end = end
        for k in range(start + 5, end):
            if lines[k].rstrip() != REVISIONS_OPEN:
                continue
            if REVISION_RE.match(next((x for x in lines[k + 1:end] if x.strip()), "")):
                body_end = k
                parsed.skipped += [Skipped(j + 1, "earlier revision", plain(lines[j]))
                                   for j in range(k, end) if REVISION_RE.match(lines[j])]
                break
        body = "\n".join(lines[start + 5:body_end]).strip("\n").rstrip()
        title = lines[start][3:].strip()
        if not has_text(body):
            parsed.skipped.append(Skipped(start + 1, "no text", cut(title, 80)))
            continue
        authored = EXPORT_MEMORY_RES[1].match(lines[start + 3]).group("authored")
        scope = EXPORT_MEMORY_RES[0].match(lines[start + 2])
        parsed.units.append(Unit(body, "memory", start + 1, section, title or cut(plain(body), TITLE_CHARS),
                                 _authored(authored), (scope.group("audience"), scope.group("boundary").strip())))
    return parsed
