"""Keepmind: a local long-term memory for LLM agents.

The repository keeps the design card's folders at its root (engine/, webui/, desktop/, icons/);
they install as `keepmind.engine`, `keepmind.webui`, `keepmind.desktop` and `keepmind.icons`
(see pyproject.toml), so no top-level name of ours can collide with another package's.
"""
