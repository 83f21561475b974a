"""Keepmind: a local long-term memory for LLM agents.

The repository keeps the design card's folders at its root (engine/, webui/, desktop/, icons/);
they install as `keepmind.engine`, `keepmind.webui`, `keepmind.desktop` and `keepmind.icons`
(see pyproject.toml), so no top-level name of ours can collide with another package's.
"""

from importlib import metadata


def version() -> str:
    """The installed distribution's version (0+unknown when run from a source tree not installed)."""
    try:
        return metadata.version("keepmind")
    except metadata.PackageNotFoundError:
        return "0+unknown"
