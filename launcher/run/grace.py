"""One grace period on every path that stops ranks.

torch elastic closes the worker processes with its own 30 s timeout when it sees a failure (and before
a restart); only its signal and error paths use the agent's `shutdown_timeout`. While a job runs, every
close of a worker context is bounded by `--grace-period` instead: SIGTERM, then SIGKILL for what outlives it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["bounded_stops"]


@contextmanager
def bounded_stops(grace_period: float) -> Iterator[None]:
    """Within the block, every `PContext.close` waits at most `grace_period` seconds before SIGKILL."""
    from torch.distributed.elastic.multiprocessing.api import PContext

    original = PContext.close

    def close(self, death_sig: signal.Signals | None = None, timeout: float = 30) -> None:
        original(self, death_sig, min(timeout, grace_period))

    PContext.close = close
    try:
        yield
    finally:
        PContext.close = original
