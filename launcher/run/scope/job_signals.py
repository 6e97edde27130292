"""Signals while a node's job runs, the same on both launch paths (the rules: launcher/signal_rules.py,
docs/RELIABILITY.md).

A job's stop is one object, `StopState`, made by its driver (launcher/run/direct_run.py, launcher/run/engine/engine_run.py) and
handed to those who change or read it: the ranks' run (`ranks_running`), their stop (rank_stop.py), the sweeps
(reaper.py), torch's agent (rank_agent.py). From the ranks' start to the launcher's exit it is what a stop signal
does. While the ranks run, the first raises `RanksStopped` where the driver is (the direct path's loop, or inside
torch elastic's agent.run(), whose `finally` then stops the ranks through rank_agent.py), as torch's
`SignalException` carries the signal to the one place that acts: a signal of --signals-to-handle reaches every
rank as it is (torchrun's contract), any other stop signal stops them with SIGTERM; either way within
--grace-period. SIGUSR1 and SIGUSR2 go to every running rank's own process (not to the processes it started),
and the job goes on. A stop signal that comes while the ranks are being stopped, or once they ran, is `hurried`:
what is left is killed at once, and the outcome stays (a failed rank's status, the first signal).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from launcher.signal_rules import forward_action, set_stop_action

__all__ = ["RanksStopped", "StopState"]


class RanksStopped(Exception):
    """A stop signal came while the ranks ran: the one received, and the one the ranks get."""

    def __init__(self, received: int, sent: int) -> None:
        super().__init__(received)
        self.received, self.sent = received, sent


class StopState:
    """A job's stop: the first stop signal while its ranks ran (`received`; `sent` is the one the ranks get), and
    the first that came while they were being stopped or after (`hurried`)."""

    def __init__(self, signals_to_handle: str = "") -> None:
        self.passed = frozenset(signal.Signals[name.strip()] for name in signals_to_handle.split(",") if name.strip())
        self.received: int | None = None
        self.sent: int = signal.SIGTERM
        self.hurried: int = 0
        self._ending = False  # the ranks are being stopped, or their run is over: a stop signal only hurries

    def stop(self, signum: int) -> None:
        """The stop action: the first while the ranks run raises RanksStopped, any other hurries the stop."""
        if self.received is not None or self._ending:
            self.hurried = self.hurried or signum
            return
        self.received = signum
        self.sent = signum if signum in self.passed else signal.SIGTERM
        raise RanksStopped(signum, self.sent)

    @contextmanager
    def ranks_running(self, send: Callable[[int], int]) -> Iterator[None]:
        """Around the ranks' run: from its start, a stop signal is `stop` (for good: after the block it only
        hurries), and within it SIGUSR1/SIGUSR2 go to `send`."""
        set_stop_action(self.stop)
        with forward_action(send, stop_instead=self.passed):
            try:
                yield
            finally:
                self._ending = True

    @contextmanager
    def ending(self) -> Iterator[None]:
        """Within the block (the ranks being stopped) a stop signal only hurries the stop; after it, as before."""
        before, self._ending = self._ending, True
        try:
            yield
        finally:
            self._ending = before
