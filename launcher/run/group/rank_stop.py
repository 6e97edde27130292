"""Stopping a node's ranks, the same on both launch paths (docs/RELIABILITY.md, "The shutdown window").

The stop signal goes to each running rank's session (every rank leads one), SIGKILL to whatever outlives
the shutdown window (`--grace-period`: torchrun's `--shutdown-timeout`, by default
TORCH_ELASTIC_SHUTDOWN_TIMEOUT or 30 s), and one line names the ranks killed and after how long. A stop
signal to the launcher meanwhile hurries the job's stop (launcher/run/scope/job_signals.py): what is left is killed at
once, and the job's outcome stays what started the stop (a failed rank's status, the first signal, the timeout).

A rank still starting gets SIGTERM in place of SIGINT: until the bootstrap has its handlers in place
(launcher/rank/bootstrap.py), Python turns a SIGINT into a KeyboardInterrupt traceback, or "Fatal Python
error: init_import_site" in its site imports, where SIGTERM ends it without a word. A rank counts as still
starting while it runs the bootstrap and does not yet catch PARENT_DEATH_SIGNAL, the bootstrap's first step
(/proc: its command line and SigCgt).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from launcher.contract.names import PARENT_DEATH_SIGNAL, PROCESS_CHECK_SECONDS
from launcher.run.scope.job_signals import StopState
from launcher.run.stacks.rank_answers import signal_state
from launcher.run.group.terminal_lines import terminal
from launcher.signal_rules import signal_name

__all__ = ["signal_for", "stop_ranks"]

_AFTER_KILL_SECONDS = 10.0  # a process in uninterruptible sleep is left to the sweep
_BOOTSTRAP = b"launcher.rank.bootstrap"


def stop_ranks(ranks: Mapping[int, subprocess.Popen], signum: int, window: float, stopping: StopState,
               wait: Callable[[float], object] = time.sleep) -> list[int]:
    """Stop the running ones of `ranks` (global rank -> process) with `signum`, SIGKILL after `window` seconds or
    once the job's stop is hurried; `wait(seconds)` waits for exits (at most that long); return the ranks killed."""
    with stopping.ending():
        sent = time.monotonic()
        for process in _running(ranks).values():
            _to_session(process.pid, signal_for(process.pid, signum))
        deadline = sent + window
        while _running(ranks) and not stopping.hurried and time.monotonic() < deadline:
            wait(min(PROCESS_CHECK_SECONDS, max(0.0, deadline - time.monotonic())))
        left = _running(ranks)
        for process in left.values():
            _to_session(process.pid, signal.SIGKILL)
        if left:
            _say_killed(sorted(left), time.monotonic() - sent, signum, window, bool(stopping.hurried))
        give_up = time.monotonic() + _AFTER_KILL_SECONDS
        while _running(ranks) and time.monotonic() < give_up:
            wait(PROCESS_CHECK_SECONDS)
    return sorted(left)


def signal_for(pid: int, signum: int) -> int:
    """The signal a rank gets for a stop by `signum`: SIGTERM in place of SIGINT while it is still starting."""
    if signum != signal.SIGINT:
        return signum
    try:
        bootstrap = _BOOTSTRAP in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return signum
    state = signal_state(pid, PARENT_DEATH_SIGNAL) if bootstrap else None
    return signal.SIGTERM if state is not None and not state.caught else signum


def _running(ranks: Mapping[int, subprocess.Popen]) -> dict[int, subprocess.Popen]:
    return {rank: process for rank, process in ranks.items() if process.poll() is None}


def _to_session(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


def _say_killed(ranks: list[int], seconds: float, signum: int, window: float, hurried: bool) -> None:
    which = f"rank {ranks[0]} was" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))} were"
    why = ("a stop signal to the launcher cut the wait short" if hurried else
           f"--grace-period or TORCH_ELASTIC_SHUTDOWN_TIMEOUT: {window:g} s")
    terminal(2).note(f"{which} killed with SIGKILL {seconds:.1f} s after {signal_name(signum)} ({why})")
