"""Leave nothing running: become the subreaper of the job, and sweep what is left when it ends."""

from __future__ import annotations

import logging

import psutil

from launcher.prctl import PR_SET_CHILD_SUBREAPER, prctl

__all__ = ["become_subreaper", "sweep_descendants"]

logger = logging.getLogger(__name__)


def become_subreaper() -> bool:
    """Make orphaned grandchildren of the ranks re-parent to this launcher, not to init, so the sweep finds them."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def sweep_descendants(grace_seconds: float) -> list[int]:
    """SIGTERM every process below this one, SIGKILL what outlives `grace_seconds`; return their pids.

    It runs once the job is over, when a stop signal to the launcher changes nothing (launcher/signal_rules.py),
    so a second Ctrl-C cannot leave the sweep half done.
    """
    leftovers = psutil.Process().children(recursive=True)
    for process in leftovers:
        _quietly(process.terminate)
    _, alive = psutil.wait_procs(leftovers, timeout=grace_seconds)
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
