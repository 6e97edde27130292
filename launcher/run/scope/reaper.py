"""Leave nothing running: become the subreaper of the job, reap what it adopts while the job runs, and sweep
what is left when it ends.

As the subreaper, the launcher inherits every process a rank leaves behind, and when such a process ends
it stays a zombie until the launcher reaps it (a rank that backgrounds shell commands left one per command
for the whole job). A thread reaps them as the job runs: only zombies that are not a session's leader,
which every rank is (both paths start each rank in a session of its own, and the launcher starts no other
process while the job runs), so a rank's exit status stays for the code that waits for it. A zombie that
made a session of its own is reaped by the sweep at the end.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from launcher.contract.names import PROCESS_CHECK_SECONDS
from launcher.prctl import PR_SET_CHILD_SUBREAPER, prctl
from launcher.proc_stat import read_stat
from launcher.run.scope.job_signals import StopState
from launcher.signal_rules import start_thread

__all__ = ["become_subreaper", "child_pids", "reaping_adopted", "reap_adopted", "spare", "sweep_descendants",
           "unspare"]

logger = logging.getLogger(__name__)
_REAP_SECONDS = 0.5
_spared: set[int] = set()  # the job's keeper (launcher/run/scope/job_keeper.py): no attempt's sweep ends it


def become_subreaper() -> bool:
    """Make orphaned grandchildren of the ranks re-parent to this launcher, not to init, so the sweep finds them."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


@contextmanager
def reaping_adopted() -> Iterator[None]:
    """Within the block, reap the launcher's adopted processes as they end (every half second)."""
    stop = threading.Event()

    def reap_until_stopped() -> None:
        while not stop.wait(_REAP_SECONDS):
            reap_adopted()

    thread = threading.Thread(target=reap_until_stopped, name="accel-reaper", daemon=True)
    start_thread(thread)
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1)


def reap_adopted() -> list[int]:
    """Reap every child that has ended and leads no session (so is no rank); return their pids."""
    reaped = []
    for pid in child_pids():
        stat = read_stat(f"/proc/{pid}/stat")
        if stat is None or stat.state != "Z" or stat.session == pid:
            continue
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                reaped.append(pid)
        except ChildProcessError:
            continue
    return reaped


def child_pids() -> set[int]:
    """This process's direct children, from /proc (cheap: no scan of every process)."""
    pids: set[int] = set()
    try:
        tasks = list(Path(f"/proc/{os.getpid()}/task").iterdir())
    except OSError:
        return pids
    for task in tasks:
        try:
            pids.update(int(pid) for pid in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return pids


def spare(pid: int) -> None:
    """Leave this child out of every sweep: its owner ends it."""
    _spared.add(pid)


def unspare(pid: int) -> None:
    """A spared child ended: sweeps may end a process with its pid again."""
    _spared.discard(pid)


def sweep_descendants(grace_seconds: float, stopping: StopState) -> list[int]:
    """SIGTERM every process below this one (the spared aside), SIGKILL what outlives `grace_seconds`, or what is
    left as soon as the job's stop is hurried (launcher/run/scope/job_signals.py: a stop signal meanwhile); return their
    pids."""
    leftovers = [process for process in psutil.Process().children(recursive=True) if process.pid not in _spared]
    for process in leftovers:
        _quietly(process.terminate)
    alive, deadline = leftovers, time.monotonic() + grace_seconds
    while alive and not stopping.hurried and time.monotonic() < deadline:
        left = max(0.0, deadline - time.monotonic())
        _, alive = psutil.wait_procs(alive, timeout=min(PROCESS_CHECK_SECONDS, left))
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
