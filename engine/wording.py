"""How a count reads in what Keepmind says ("1 memory", "2 memories", "0 edges"): one rule for
the CLI, the pages and the engine's own messages."""

from __future__ import annotations


def counted(n: int, noun: str) -> str:
    if n == 1:
        return f"{n} {noun}"
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return f"{n} {noun[:-1]}ies"
    return f"{n} {noun}{'es' if noun.endswith('s') else 's'}"


__all__ = ["counted"]
