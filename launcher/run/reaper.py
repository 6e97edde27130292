"""Leave nothing running: become the subreaper of the job, and sweep what is left when it ends."""

from __future__ import annotations

import logging
import time

import psutil

from launcher.prctl import PR_SET_CHILD_SUBREAPER, prctl
from launcher.signal_rules import stop_hurried

__all__ = ["become_subreaper", "sweep_descendants"]

logger = logging.getLogger(__name__)
_HURRY_CHECK_SECONDS = 0.05


def become_subreaper() -> bool:
    """Make orphaned grandchildren of the ranks re-parent to this launcher, not to init, so the sweep finds them."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def sweep_descendants(grace_seconds: float) -> list[int]:
    """SIGTERM every process below this one, SIGKILL what outlives `grace_seconds`, or at once when a stop
    signal comes meanwhile (launcher/signal_rules.py: it changes nothing else); return their pids."""
    leftovers = psutil.Process().children(recursive=True)
    for process in leftovers:
        _quietly(process.terminate)
    alive, deadline = leftovers, time.monotonic() + grace_seconds
    while alive and not stop_hurried() and time.monotonic() < deadline:
        _, alive = psutil.wait_procs(alive, timeout=min(_HURRY_CHECK_SECONDS, max(0.0, deadline - time.monotonic())))
    for process in alive:
        _quietly(process.kill)
    psutil.wait_procs(alive, timeout=5)
    if leftovers:
        logger.info("stopped %d leftover processes: %s", len(leftovers), [p.pid for p in leftovers])
    return [process.pid for process in leftovers]


def _quietly(action) -> None:
    try:
        action()
    except psutil.NoSuchProcess:
        pass
