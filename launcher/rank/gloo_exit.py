"""At a rank's exit, let gloo's worker threads finish releasing their last collective first.

A gloo worker thread (`pt_gloo_runloop`) drops a finished collective's tensors just after the rank's wait for it
returned. A tensor the script also holds needs the GIL for that, and a thread that asks for the GIL once the
interpreter is finalizing is ended where it stands: the rank dies of SIGABRT ("terminate called without an
active exception") after its work is done. It happens under torchrun too, now and then on a loaded machine, and
every time when the script keeps the GIL to its end (docs/RELIABILITY.md, "A clean exit after the last
collective").

So the rank's last exit handler, which runs before the interpreter finalizes, waits with the GIL released
until every gloo worker thread is idle: only while torch.distributed is imported and such a thread runs, and for
at most `SETTLE_SECONDS`. A process the rank forks does not wait: the handler is the rank's own.
"""

from __future__ import annotations

import atexit
import os
import sys
import time

from launcher.proc_stat import read_stat

__all__ = ["GLOO_THREAD", "SETTLE_SECONDS", "settle", "settle_gloo_at_exit"]

GLOO_THREAD = "pt_gloo_runloop"  # the name torch's ProcessGroupGloo gives its worker threads
SETTLE_SECONDS = 2.0
_POLL_SECONDS = 0.001  # a rank's exit waits on it: each sleep only hands the GIL to a thread that wants it
_IDLE_POLLS = 3  # polls in a row that find every gloo thread asleep


def settle_gloo_at_exit() -> None:
    """Register the wait; registered before the user's code runs, it runs after every handler that code adds."""
    owner = os.getpid()
    atexit.register(lambda: settle(SETTLE_SECONDS) if os.getpid() == owner and "torch.distributed" in sys.modules
                    else None)


def settle(bound: float) -> bool:
    """Wait until no gloo worker thread runs (True), or for `bound` seconds (False)."""
    deadline = time.monotonic() + bound
    idle = 0
    while idle < _IDLE_POLLS:
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_SECONDS)  # the GIL released: a thread waiting for it takes it now
        idle = 0 if _a_gloo_thread_runs() else idle + 1
    return True


def _a_gloo_thread_runs() -> bool:
    """Whether a gloo worker thread of this process is running or ready to run (state R in its stat)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return False
    for task in tasks:
        stat = read_stat(f"/proc/self/task/{task}/stat")  # None: the thread ended meanwhile
        if stat is not None and stat.name == GLOO_THREAD and stat.state == "R":
            return True
    return False
