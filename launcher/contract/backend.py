"""The resolved compile backend of a launch: its name, the level that gave it, and what was asked for."""

from __future__ import annotations

from dataclasses import dataclass

from launcher.contract.names import ACCELERATOR_KEYWORD

__all__ = ["ResolvedBackend"]


@dataclass(frozen=True)
class ResolvedBackend:
    """The backend every rank will validate and use, and the level that gave it."""

    name: str
    source: str
    requested: str

    def describe(self) -> str:
        """`inductor (from --compile-backend)`, noting an explicit `accelerator` request."""
        via = f", via {ACCELERATOR_KEYWORD!r}" if self.requested == ACCELERATOR_KEYWORD else ""
        return f"{self.name} (from {self.source}{via})"
