"""Signals while a node's ranks run, the same on both launch paths (the rules: launcher/signal_rules.py,
docs/RELIABILITY.md).

A stop signal raises `RanksStopped` where the driver is (the direct path's loop, or inside torch elastic's
agent.run(), whose `finally` then stops the ranks through launcher/run/rank_agent.py): a signal of
--signals-to-handle reaches every rank as it is (torchrun's contract), any other stop signal stops them with
SIGTERM; either way within --grace-period. SIGUSR1 and SIGUSR2 go to every running rank's own process (not to
the processes it started), and the job goes on. A stop signal that comes while the ranks are being stopped
has the rest killed at once (launcher/run/rank_stop.py) and keeps the outcome (a failed rank's status).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from launcher.signal_rules import forward_action, hurry_stop, set_stop_action

__all__ = ["RanksStopped", "StopState", "ranks_running"]


class RanksStopped(Exception):
    """A stop signal came while the ranks ran: the one received, and the one the ranks get."""

    def __init__(self, received: int, sent: int) -> None:
        super().__init__(received)
        self.received, self.sent = received, sent


class StopState:
    """The first stop signal of a run, once it came: `sent` is the one the ranks get."""

    def __init__(self, passed: frozenset[int]) -> None:
        self.passed = passed
        self.received: int | None = None
        self.sent: int = signal.SIGTERM

    def stop(self, signum: int) -> None:
        """The stop action: the first raises RanksStopped, a later one only hurries the stop."""
        if self.received is not None:
            hurry_stop(signum)
            return
        self.received = signum
        self.sent = signum if signum in self.passed else signal.SIGTERM
        raise RanksStopped(signum, self.sent)


@contextmanager
def ranks_running(send: Callable[[int], int], signals_to_handle: str) -> Iterator[StopState]:
    """Around the ranks' run: stop signals raise RanksStopped, SIGUSR1/SIGUSR2 go to `send`; after it, a stop
    signal only hurries the sweep (launcher/run/reaper.py)."""
    passed = frozenset(signal.Signals[name.strip()] for name in signals_to_handle.split(",") if name.strip())
    state = StopState(passed)
    set_stop_action(state.stop)
    try:
        with forward_action(send, stop_instead=passed):
            yield state
    finally:
        set_stop_action(hurry_stop)
