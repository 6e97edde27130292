"""How a job ended, on either path; and the --timeout deadline that ends it the same way on both."""

from __future__ import annotations

import time
from dataclasses import dataclass

from launcher.contract.names import TIMEOUT_STATUS
from launcher.run.failure.rank_failure import RankFailure

__all__ = ["Deadline", "JobOutcome", "JobTimeout"]


@dataclass(frozen=True)
class JobOutcome:
    """How a job ended: its exit status, and the one message the user should read (if any)."""

    status: int
    message: str | None = None
    failure: RankFailure | None = None


class JobTimeout(Exception):
    """--timeout ran out while the ranks ran."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds

    def reason(self) -> str:
        """Why the ranks are stopped."""
        return f"the job ran past --timeout {self.seconds:g}s"

    def outcome(self) -> JobOutcome:
        """The job's end once every rank was stopped."""
        return JobOutcome(TIMEOUT_STATUS, f"{self.reason()}; every rank was stopped")


class Deadline:
    """--timeout from now (None: no timeout), looked at by the direct path's loop and the agent's monitor."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._end = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left (None: no timeout); raises JobTimeout once none are."""
        if self._end is None:
            return None
        left = self._end - time.monotonic()
        if left <= 0:
            raise JobTimeout(self.seconds)
        return left
