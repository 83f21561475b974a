"""A doctor check's result: a leaf module, so every subsystem can return one without a cycle."""

from __future__ import annotations

from dataclasses import dataclass

LEVELS = ("pass", "warning", "error")


@dataclass(frozen=True)
class Check:
    name: str
    level: str  # pass | warning | error
    message: str

    def as_dict(self) -> dict:
        return {"name": self.name, "level": self.level, "message": self.message}


__all__ = ["Check", "LEVELS"]
