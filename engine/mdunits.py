"""Markdown memory files (OpenClaw's MEMORY.md and memory/YYYY-MM-DD.md) cut into units of meaning.

A unit is what one memory should hold: a top-level bullet with everything nested under it, a
labelled block (`**Label**:` and the list, table, code or paragraph it introduces), a table, a
code block or a paragraph, with the path of headings above it as context and a title taken from
its own text. What is not a memory is reported, never stored: separators, headings with nothing
under them, labels with nothing after them, front matter, comments, a quoted description under
the file's own title, and fragments without a letter or digit. A unit longer than recall could
ever inject (MAX_UNIT_CHARS) is cut between its items or rows, each part keeping the label or
header that gives it meaning.

Keepmind's own Markdown export is read as the memories it holds (engine/mdexported.py), not cut
by meaning.

Pure functions over text: engine/mdimport.py turns units into proposals for curation.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

MAX_UNIT_CHARS = 1500  # recall injects at most 2,000 characters: a unit should fit with room to spare
TITLE_CHARS = 100

HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
FENCE_RE = re.compile(r"^\s*(`{3,}|~{3,})")
SEPARATOR_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
ITEM_RE = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*)|[ \t]*)$")
TABLE_DELIM_RE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
COLON = ":："
LABEL_RES = (
    re.compile(r"^(?:\*\*|__)(?P<label>[^*_\s][^*_]*?)(?:\*\*|__)\s*[:：]?\s*$"),  # **Label**: or **Label**
    re.compile(r"^(?:\*\*|__)(?P<label>[^*_\s][^*_]*?)[:：]\s*(?:\*\*|__)\s*$"),  # **Label:**
    re.compile(r"^(?P<label>[^\s#>|`*_\-][^:：|]{0,60}?)\s*[:：]\s*$"),  # Label:  (a short line)
)
GENERIC_HEADINGS = {"memory", "memories", "memory md", "long term memory", "longterm memory", "notes",
                    "memory notes", "长期记忆", "记忆", "笔记", "daily log", "daily notes", "today"}
TITLE_WORDS = ("memory", "memories", "notes", "journal", "log", "记忆", "笔记", "日志")  # a file's own title
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}\b")


@dataclass(frozen=True)
class Unit:
    """One memory's worth of Markdown: its text as written, where it starts, its headings, its title."""

    text: str
    kind: str  # item | labelled | table | code | paragraph
    line: int
    section: tuple[str, ...]
    title: str
    authored_at: int | None = None  # when it was said (ms), as a Keepmind export records it
    scope: tuple[str, str] | None = None  # (audience, boundary) it was exported from, as a Keepmind export records it


@dataclass(frozen=True)
class Skipped:
    """Lines that are not a memory, and why (separator, empty heading, bare label, ...)."""

    line: int
    reason: str
    text: str = ""


@dataclass
class Parsed:
    units: list[Unit] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


@dataclass
class Block:
    kind: str  # heading | separator | code | table | list | paragraph | comment | frontmatter
    lines: list[str]
    start: int  # 1-based
    level: int = 0
    heading: str = ""


# -- blocks -----------------------------------------------------------------------------------


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _table_at(lines: list[str], i: int) -> bool:
    line = lines[i]
    if "|" not in line:
        return False
    if line.lstrip().startswith("|"):
        return True
    return i + 1 < len(lines) and bool(TABLE_DELIM_RE.match(lines[i + 1])) and "|" in lines[i + 1]


def _starts_block(lines: list[str], i: int) -> bool:
    line = lines[i]
    return bool(HEADING_RE.match(line) or FENCE_RE.match(line) or SEPARATOR_RE.match(line)
                or ITEM_RE.match(line) or _table_at(lines, i) or line.lstrip().startswith("<!--"))


def _list_end(lines: list[str], i: int) -> int:
    """The line after the list that starts at line i: items, nested items, indented continuations,
    and lines that continue an item lazily; a blank line ends it unless more of the list follows."""
    base, j, n = _indent(lines[i]), i + 1, len(lines)
    while j < n:
        line = lines[j]
        if not line.strip():
            k = j
            while k < n and not lines[k].strip():
                k += 1
            if k < n and (_indent(lines[k]) > base or (ITEM_RE.match(lines[k]) and not SEPARATOR_RE.match(lines[k]))):
                j = k
                continue
            break
        if SEPARATOR_RE.match(line) and _indent(line) <= base:
            break
        if _indent(line) > base or ITEM_RE.match(line):
            j += 1
            continue
        if _starts_block(lines, j):
            break
        j += 1  # a lazy continuation of the item above
    return j


def blocks(text: str) -> list[Block]:
    """The file's blocks, in order (blank lines only separate them)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[Block] = []
    i, n = 0, len(lines)
    if lines and lines[0].strip() == "---":
        for j in range(1, min(n, 80)):
            if lines[j].strip() in ("---", "..."):
                out.append(Block("frontmatter", lines[:j + 1], 1))
                i = j + 1
                break
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        fence = FENCE_RE.match(line)
        if fence:
            mark, j = fence.group(1), i + 1
            while j < n and not (lines[j].strip().startswith(mark) and not lines[j].strip().strip(mark[0])):
                j += 1
            out.append(Block("code", lines[i:j + 1], i + 1))
            i = j + 1
        elif line.lstrip().startswith("<!--"):
            j = i
            while j < n and "-->" not in lines[j]:
                j += 1
            out.append(Block("comment", lines[i:j + 1], i + 1))
            i = j + 1
        elif heading := HEADING_RE.match(line):
            text_ = (heading.group(2) or "").strip()
            text_ = re.sub(r"[ \t]+#+$", "", text_).strip()  # closing hashes
            out.append(Block("heading", [line], i + 1, level=len(heading.group(1)), heading=text_))
            i += 1
        elif SEPARATOR_RE.match(line):
            out.append(Block("separator", [line], i + 1))
            i += 1
        elif _table_at(lines, i):
            j = i
            while j < n and lines[j].strip() and "|" in lines[j]:
                j += 1
            out.append(Block("table", lines[i:j], i + 1))
            i = j
        elif ITEM_RE.match(line):
            j = _list_end(lines, i)
            out.append(Block("list", lines[i:j], i + 1))
            i = j
        else:
            j = i + 1
            while j < n and lines[j].strip() and not _starts_block(lines, j):
                j += 1
            out.append(Block("paragraph", lines[i:j], i + 1))
            i = j
    return out


# -- text helpers -------------------------------------------------------------------------------


def plain(text: str) -> str:
    """One line of Markdown as plain text: markers, emphasis, code ticks and link targets removed."""
    text = re.sub(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+", "", text)
    text = re.sub(r"^\s*(?:#{1,6}|>)\s*", "", text)
    text = re.sub(r"^\[[ xX]\]\s+", "", text)  # a task list's box
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"(\*\*|__|~~|`)", "", text)
    return " ".join(text.split())


def cut(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a space when there is one late enough (else anywhere: CJK)."""
    if len(text) <= limit:
        return text
    head = text[:limit - 1]
    space = head.rfind(" ")
    if space > limit * 0.6:
        head = head[:space]
    return head.rstrip(" ,;:-–—、，；：") + "…"


def label_of(line: str) -> str | None:
    """The label when a line is only a label (`**Core features**:`, `Notes:`), else None."""
    stripped = re.sub(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+", "", line).strip()
    if "http://" in stripped or "https://" in stripped:
        return None
    for pattern in LABEL_RES:
        found = pattern.match(stripped)
        if found:
            return found.group("label").strip().rstrip(COLON).strip()
    return None


def has_text(text: str) -> bool:
    return len(re.findall(r"\w", plain(text), flags=re.UNICODE)) >= 2


def _generic(heading: str, level: int) -> bool:
    """A heading that names the file rather than a topic (`# MEMORY.md - Long-term memory`, a date):
    left out of the units' heading path."""
    words = " ".join(re.findall(r"\w+", plain(heading).lower()))
    if not words or words in GENERIC_HEADINGS or DATE_RE.match(plain(heading)):
        return True
    return level == 1 and any(w in words.split() or (not w.isascii() and w in words) for w in TITLE_WORDS)


# -- lists, tables and cutting ---------------------------------------------------------------------


def _items(lines: list[str]) -> list[tuple[int, list[str]]]:
    """A list block's top-level items as (offset of its first line, its lines), blank tails dropped."""
    starts = [k for k, line in enumerate(lines) if ITEM_RE.match(line)]
    base = min(_indent(lines[k]) for k in starts)
    tops = [k for k in starts if _indent(lines[k]) <= base]
    out = []
    for a, b in zip(tops, tops[1:] + [len(lines)]):
        chunk = lines[a:b]
        while chunk and not chunk[-1].strip():
            chunk.pop()
        out.append((a, chunk))
    return out


def _item_text(chunk: list[str]) -> str:
    """An item without its own marker; what is nested under it dedented (its markers kept)."""
    first = plain_marker(chunk[0])
    rest = textwrap.dedent("\n".join(chunk[1:])).strip("\n")
    return first + ("\n" + rest if rest else "")


def plain_marker(line: str) -> str:
    found = ITEM_RE.match(line)
    return (found.group(3) or "").strip() if found else line.strip()


def _pack(head: str, parts: list[str], limit: int = MAX_UNIT_CHARS) -> list[str]:
    """`head` + parts in order, as few pieces as fit `limit` (a part longer than that stays whole)."""
    pieces, current = [], []
    for part in parts:
        if current and len(head) + sum(len(p) + 1 for p in current) + len(part) + 1 > limit:
            pieces.append(current)
            current = []
        current.append(part)
    if current:
        pieces.append(current)
    return [("\n".join([head, *piece]) if head else "\n".join(piece)) for piece in pieces]


def _table_pieces(lines: list[str]) -> list[str]:
    rows = [line.strip() for line in lines if line.strip()]
    if len(rows) >= 2 and TABLE_DELIM_RE.match(rows[1]):
        return _pack("\n".join(rows[:2]), rows[2:])
    return _pack("", rows)


def _table_title(text: str) -> str:
    header = text.splitlines()[0]
    cells = [plain(c) for c in header.strip().strip("|").split("|")]
    return " · ".join(c for c in cells if c)


# -- units ----------------------------------------------------------------------------------------


class _Builder:
    """Walks the blocks with the open headings, turning content into units."""

    def __init__(self):
        self.parsed = Parsed()
        self.headings: list[list] = []  # [level, text, line, has_content]
        self.label: tuple[Block, str] | None = None  # a label (or lead-in) waiting for its content

    def section(self) -> tuple[str, ...]:
        return tuple(plain(h[1]) for h in self.headings if not _generic(h[1], h[0]))

    def skip(self, line: int, reason: str, text: str = "") -> None:
        self.parsed.skipped.append(Skipped(line, reason, cut(plain(text), 80)))

    def unit(self, text: str, kind: str, line: int, label: str | None = None) -> None:
        text = text.strip("\n").rstrip()
        if not has_text(text):
            self.skip(line, "no text", text)
            return
        for h in self.headings:
            h[3] = True
        section = self.section()
        first = next((plain(x) for x in text.splitlines() if plain(x)), "")
        if kind == "table":
            own = _table_title(text)
        elif kind == "code" and not label:
            own = next((x.strip() for x in text.splitlines()[1:] if x.strip() and not FENCE_RE.match(x)), first)
        else:
            own = first
        if label:
            rest = [plain(x) for x in text.splitlines()[1:] if plain(x) and not FENCE_RE.match(x)]
            title = f"{label}: {rest[0]}" if rest and kind != "table" else label
        elif section and not own.lower().startswith(section[-1].lower()):
            title = f"{section[-1]}: {own}"
        else:
            title = own
        self.parsed.units.append(Unit(text, "labelled" if label else kind, line, section, cut(title, TITLE_CHARS)))

    def waiting_label_is_bare(self) -> None:
        if self.label is not None:
            block, label = self.label
            self.skip(block.start, "bare label", label)
            self.label = None

    def heading(self, block: Block) -> None:
        self.waiting_label_is_bare()
        while self.headings and self.headings[-1][0] >= block.level:
            self._close(self.headings.pop())
        if not block.heading.strip():
            self.skip(block.start, "empty heading")
            return
        self.headings.append([block.level, block.heading, block.start, False])

    def _close(self, heading: list) -> None:
        if not heading[3]:
            self.skip(heading[2], "empty heading", heading[1])

    def content(self, block: Block) -> None:
        if block.kind == "paragraph":
            self.paragraph(block)
        elif block.kind == "list":
            self.list(block)
        else:  # table | code
            self.labelled_or_plain(block)

    def paragraph(self, block: Block) -> None:
        first_label = label_of(block.lines[0])
        if first_label is not None and len(block.lines) == 1:
            self.waiting_label_is_bare()
            self.label = (block, first_label)
            return
        text = "\n".join(x.strip() for x in block.lines)
        if not self.section() and all(x.lstrip().startswith(">") for x in block.lines):
            self.skip(block.start, "file description", text)  # `> what this file is for`, under its title
        elif self.label is not None:
            self.labelled_or_plain(block)
        elif first_label is not None:
            self.unit(text, "paragraph", block.start, label=first_label)
        elif text.rstrip()[-1:] in COLON:  # a lead-in sentence: it introduces what follows
            self.label = (block, plain(text).rstrip(COLON).strip())
        else:
            self.unit(text, "paragraph", block.start)

    def labelled_or_plain(self, block: Block) -> None:
        """A table, code block or paragraph, with the label waiting for it if there is one."""
        label, head, start = None, "", block.start
        if self.label is not None:
            label_block, label = self.label
            head, start = "\n".join(x.strip() for x in label_block.lines), label_block.start
            self.label = None
        if block.kind == "table":
            for piece in _table_pieces(block.lines):
                self.unit(f"{head}\n{piece}" if head else piece, "table", start, label=label)
        else:
            body = "\n".join(block.lines) if block.kind == "code" else "\n".join(x.strip() for x in block.lines)
            self.unit(f"{head}\n{body}" if head else body, block.kind, start, label=label)

    def list(self, block: Block) -> None:
        items = _items(block.lines)
        if self.label is not None:  # the list is the waiting label's content
            label_block, label = self.label
            self.label = None
            head = "\n".join(x.strip() for x in label_block.lines)
            parts = [textwrap.dedent("\n".join(chunk)) for _, chunk in items]
            for piece in _pack(head, parts):
                self.unit(piece, "item", label_block.start, label=label)
            return
        k = 0
        while k < len(items):
            offset, chunk = items[k]
            line = block.start + offset
            label = label_of(chunk[0])
            if label is not None and len(chunk) == 1:  # a bare label item: its siblings are its content
                group = []
                k += 1
                while k < len(items) and not (label_of(items[k][1][0]) is not None and len(items[k][1]) == 1):
                    group.append(textwrap.dedent("\n".join(items[k][1])))
                    k += 1
                if not group:
                    self.skip(line, "bare label", label)
                    continue
                for piece in _pack(plain_marker(chunk[0]), group):
                    self.unit(piece, "item", line, label=label)
                continue
            text = _item_text(chunk)
            if len(text) > MAX_UNIT_CHARS and len(chunk) > 1:
                nested = textwrap.dedent("\n".join(chunk[1:])).split("\n")
                parts = ["\n".join(c) for _, c in _items(nested)] if any(ITEM_RE.match(x) for x in nested) else nested
                for piece in _pack(plain_marker(chunk[0]), parts):
                    self.unit(piece, "item", line, label=label)
            else:
                self.unit(text, "item", line, label=label if len(chunk) > 1 else None)
            k += 1

    def finish(self) -> Parsed:
        self.waiting_label_is_bare()
        while self.headings:
            self._close(self.headings.pop())
        self.parsed.skipped.sort(key=lambda s: s.line)
        return self.parsed


def units(text: str) -> Parsed:
    """Cut one Markdown memory file into units of meaning, and say what was left out and why (a
    Keepmind Markdown export is read by engine/mdexported.py instead: mdimport picks)."""
    builder = _Builder()
    for block in blocks(text):
        if block.kind == "heading":
            builder.heading(block)
        elif block.kind == "separator":
            builder.waiting_label_is_bare()
            builder.skip(block.start, "separator")
        elif block.kind in ("frontmatter", "comment"):
            builder.skip(block.start, block.kind.replace("frontmatter", "front matter"))
        else:
            builder.content(block)
    return builder.finish()
