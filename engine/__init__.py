"""Keepmind's memory engine: the store, its policy, the verbs, recall and the write path.

Imports no web or GUI library; `open_engine(home)` is the one way in, and the names below are
what the outer layers (webui, desktop) may use of it.
"""

from .browse import SORTS, SOURCE_GROUPS, MemoryFilter, Page
from .checks import Check
from .engine import DB_NAME, SETTINGS_NAME, Engine, open_engine
from .errors import EngineError, InvalidInput, NotFound, ScopeError
from .graph import Anchor, Edge
from .history import DiffPart
from .jobs import Job
from .policy import AUDIENCES, Scope
from .private import make_private_dir, open_private, write_private
from .results import StoreResult, UpdateResult
from .sessions import MAX_TURN_CHARS
from .store import Relation
from .tokens import CreatedToken, Token

__all__ = [
    "AUDIENCES", "DB_NAME", "MAX_TURN_CHARS", "SETTINGS_NAME", "SORTS", "SOURCE_GROUPS", "Anchor", "Check",
    "CreatedToken", "DiffPart", "Edge", "Engine", "EngineError", "InvalidInput", "Job", "MemoryFilter", "NotFound",
    "Page", "Relation", "Scope", "ScopeError", "StoreResult", "Token", "UpdateResult", "make_private_dir",
    "open_engine", "open_private", "write_private",
]
