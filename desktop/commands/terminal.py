"""Stored text made safe to print on a terminal.

Memory text, titles, session names and import files are data from conversations and elsewhere:
printed raw, an escape sequence (ESC, CSI, OSC...) in them could move the cursor, retitle the
window, hide what follows or write a link, and a bidi override could show a line in another
order than it is stored in. Human-readable output shows those characters as escapes instead
(`\\x1b`, `\\u202e`); newline and tab stay as they are, so a memory's lines read as lines.
"""

from __future__ import annotations

import json
import re

# C0 controls but tab and newline, DEL, the C1 controls (U+009B is CSI on some terminals), and
# the bidi marks, embeddings, overrides and isolates (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# What json.dumps(ensure_ascii=False) leaves raw of those (it escapes the C0 controls itself).
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: object) -> str:
    """`text` with every character that could rewrite the terminal shown as an escape."""
    return _UNSAFE.sub(_escaped, str(text))


def one_line(text: object) -> str:
    """`text` for a one-line listing: its whitespace runs (newlines too) as one space, then safe."""
    return for_terminal(" ".join(str(text).split()))


def json_for_terminal(value, **dumps) -> str:
    """json.dumps(value, ensure_ascii=False, ...) with the characters above as \\u escapes: the same
    JSON to a parser, readable non-ASCII text, nothing that acts on a terminal."""
    text = json.dumps(value, ensure_ascii=False, **dumps)
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
