"""One shutdown window on every path of the engine that stops ranks.

torch elastic closes the worker processes with its own 30 s timeout when it sees a failure (and before
a restart); only its signal and error paths use the agent's `shutdown_timeout`. While a job runs, every
close of a worker context stops the ranks as the direct path does (launcher/run/rank_stop.py): the signal,
SIGKILL for what outlives --grace-period, one line naming the ranks killed; the engine's own close then
finds them gone and closes its files.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

from launcher.run.rank_stop import stop_ranks

__all__ = ["bounded_stops"]


@contextmanager
def bounded_stops(grace_period: float) -> Iterator[None]:
    """Within the block, every `PContext.close` stops its ranks within `grace_period` seconds."""
    from torch.distributed.elastic.multiprocessing.api import PContext

    original = PContext.close

    def close(self, death_sig: signal.Signals | None = None, timeout: float = 30) -> None:
        handlers = getattr(self, "subprocess_handlers", {})
        ranks = {int(self.envs[local_rank].get("RANK", local_rank)): handler.proc
                 for local_rank, handler in handlers.items()}
        stop_ranks(ranks, death_sig or signal.SIGTERM, grace_period)
        original(self, death_sig, min(timeout, grace_period))

    PContext.close = close
    try:
        yield
    finally:
        PContext.close = original
