"""Keepmind's memory engine: the store, its policy, the verbs, recall and the write path.

Imports no web or GUI library; `open_engine(home)` is the one way in.
"""

from .engine import Engine, StoreResult, UpdateResult, open_engine
from .errors import EngineError
from .policy import Scope

__all__ = ["Engine", "EngineError", "Scope", "StoreResult", "UpdateResult", "open_engine"]
