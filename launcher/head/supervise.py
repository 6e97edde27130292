"""Running the runner processes of a hostfile launch: the first node that fails stops every other node."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from collections.abc import Sequence

import psutil

from launcher.contract.names import PROCESS_CHECK_SECONDS, SUCCESS_STATUS
from launcher.errors import FlagConflictError, OpenFilesError
from launcher.head.runners import RUNNERS, LaunchCommand
from launcher.signal_rules import exit_status
from launcher.signal_rules import stop_action, stop_outcome

__all__ = ["supervise", "make_room_for", "check_runner_found"]

_SPARE_FILES = 64  # the launcher's own: its streams, a Popen's short-lived pipes, its modules


def check_runner_found(commands: Sequence[LaunchCommand], runner: str) -> None:
    """Each local process a hostfile launch starts (the runner's program) is a program on its PATH."""
    for command in commands:
        path = os.pathsep.join(os.get_exec_path({**os.environ, **command.env}))
        if shutil.which(command.argv[0], path=path) is None:
            raise FlagConflictError(f"--launcher {runner}", f"{command.argv[0]!r} is not a program on PATH "
                                    f"({path or 'empty'}); install it, or set PATH to include it")


def make_room_for(commands: Sequence[LaunchCommand]) -> None:
    """Raise this process's soft limit on open files so that every runner process (one pipe each) fits,
    up to the hard limit; OpenFilesError, before anything starts, when even that is too low."""
    needed = len(commands) + _SPARE_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise OpenFilesError(len(commands), needed, hard, [name for name, runner in RUNNERS.items()
                                                           if not runner.per_node])
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def supervise(commands: Sequence[LaunchCommand], grace_seconds: float) -> tuple[int, str | None]:
    """Start every command (no shell), wait; returns (exit status, message for the user or None)."""
    received: list[int] = []
    processes: list[psutil.Popen] = []
    with stop_action(received.append):  # every stop signal (launcher/signal_rules.py) stops every node
        try:
            for command in commands:
                processes.append(psutil.Popen(command.argv, env={**os.environ, **command.env},
                                              stdin=subprocess.PIPE))
            return _wait(commands, processes, received, grace_seconds)
        finally:
            _stop(commands, processes, grace_seconds)


def _wait(commands, processes, received, grace_seconds) -> tuple[int, str | None]:
    alive = list(processes)
    while True:
        if received:
            return stop_outcome(received[0], "every node was stopped")
        for command, process in zip(commands, processes):
            status = process.poll()
            if status is not None and status != 0:
                hosts = command.host or "every node"
                shown = exit_status(status)
                return shown, f"the node launcher on {hosts} exited with status {shown}; every other node was stopped"
        if not alive:
            return SUCCESS_STATUS, None
        _, alive = psutil.wait_procs(alive, timeout=PROCESS_CHECK_SECONDS)


def _stop(commands: Sequence[LaunchCommand], processes: Sequence[psutil.Popen], grace_seconds: float) -> None:
    """Close every runner's stdin; give those that reach one node time to end by themselves (the node launcher on
    the far side stops its ranks when its stdin closes, then the connection ends), then SIGTERM, then SIGKILL."""
    for process in processes:
        if process.stdin:
            process.stdin.close()
    _wait_all([process for command, process in zip(commands, processes) if command.host], grace_seconds + 5)
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in _wait_all(processes, 5):
        process.kill()
        process.wait()


def _wait_all(processes: Sequence[psutil.Popen], seconds: float) -> list[psutil.Popen]:
    """Wait up to `seconds` in all for `processes`; return those still running."""
    return psutil.wait_procs(processes, timeout=seconds)[1]
