"""How a job ended, on either path."""

from __future__ import annotations

from dataclasses import dataclass

from launcher.run.failure.rank_failure import RankFailure

__all__ = ["JobOutcome"]


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended: its exit status, and the one message the user should read (if any)."""

    status: int
    message: str | None = None
    failure: RankFailure | None = None
