"""Signals while the engine runs the ranks (the rules: launcher/signal_rules.py, docs/RELIABILITY.md).

A stop signal is raised into torch elastic's agent as its own SignalException: a signal of
--signals-to-handle reaches every rank as it is (torchrun's contract), any other stop signal stops them with
SIGTERM; either way within --grace-period. SIGUSR1 and SIGUSR2 go to every running rank's own process (not to
the processes it started), and the job goes on. A stop signal that comes while the ranks are being stopped
(the engine's close, or the sweep after it) has the rest killed at once (launcher/run/rank_stop.py) and keeps
the outcome (a failed rank's status); when the engine would then restart the ranks, it stops the job instead.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

from launcher.signal_rules import (forward_action, hurry_stop, hurrying_signal, install_signal_rules, set_stop_action,
                                   stop_hurried)

__all__ = ["ranks_running", "received_signal"]


def received_signal(exc: BaseException) -> int:
    """The signal the launcher received, from the engine's SignalException."""
    return getattr(exc, "received", None) or int(exc.sigval)


@contextmanager
def ranks_running(signals_to_handle: str) -> Iterator[None]:
    """Around the engine's run: stop signals raise into it, SIGUSR1/SIGUSR2 reach the ranks; after it, a stop
    signal only hurries the sweep (launcher/run/reaper.py)."""
    from torch.distributed.elastic.multiprocessing.api import PContext, SignalException

    passed_as_they_are = {signal.Signals[name.strip()] for name in signals_to_handle.split(",") if name.strip()}
    live: list[PContext] = []
    received: list[int] = []

    def stop(signum: int) -> None:
        if received:
            hurry_stop(signum)
        received.append(signum)
        sent = signum if signum in passed_as_they_are else signal.SIGTERM
        exc = SignalException(f"Process {os.getpid()} got signal: {signum}", sigval=signal.Signals(sent))
        exc.received = received[0]  # the first stop signal names the outcome
        raise exc

    def forward(signum: int) -> int:
        reached = 0
        for context in list(live):
            for handler in getattr(context, "subprocess_handlers", {}).values():
                handler.proc.send_signal(signum)  # sends only to a rank not yet waited for (its pid is still its own)
                reached += handler.proc.returncode is None
        return reached

    original_start, original_close = PContext.start, PContext.close

    def start(self: PContext) -> None:
        if stop_hurried() and not received:  # it came while the last attempt's ranks were stopped: no restart
            stop(hurrying_signal())
        live.append(self)
        try:
            original_start(self)
        finally:
            install_signal_rules(passed_as_they_are)  # torch elastic has just put its handlers there

    def close(self: PContext, death_sig: signal.Signals | None = None, timeout: float = 30) -> None:
        if self in live:
            live.remove(self)
        original_close(self, death_sig, 0 if stop_hurried() else timeout)

    PContext.start, PContext.close = start, close
    set_stop_action(stop)
    try:
        with forward_action(forward, stop_instead=passed_as_they_are):
            yield
    finally:
        set_stop_action(hurry_stop)
        PContext.start, PContext.close = original_start, original_close
        install_signal_rules(passed_as_they_are)
