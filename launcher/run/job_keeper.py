"""What outlives a SIGKILLed launcher: a small keeper process that ends every process of the job within the grace
window after the launcher's death, whatever those processes do with SIGTERM (docs/RELIABILITY.md, "Launcher
death").

The launcher starts the keeper in a session of its own (a Ctrl-C at the terminal, or a signal to the launcher's
group, does not reach it) with the read end of a pipe as its stdin; the launcher alone holds the write end, so
the keeper's read ends when the launcher does, however it ends. A launcher that ends well has swept its job and
ends the keeper first (`keeper`). At the launcher's death the ranks' own watch (launcher/rank/launcher_link.py)
sends SIGTERM through what they started; the keeper waits for the job to go, and SIGKILLs what is left when the
grace window ends.

The job's processes are found as the fault tests find them: by the launcher's mark in their environment
(`ACCEL_LAUNCHER_PID`, which every rank gets and passes on to what it starts, a `setsid` daemon included), and by
their session, when a rank leads it (a child that dropped its environment but stayed in the rank's session). Only
a process that both leaves the rank's session and drops the mark escapes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from launcher.contract.names import LAUNCHER_PID_VAR
from launcher.run.reaper import spare

__all__ = ["keeper", "job_pids"]

_POLL_SECONDS = 0.1
_KILL_PASSES = 5  # a process forking while it is killed leaves a child the next pass finds


@contextmanager
def keeper(grace_seconds: float) -> Iterator[None]:
    """Within the block, a keeper ends the job's processes `grace_seconds` after this launcher's death."""
    read_end, write_end = os.pipe()
    environ = {key: value for key, value in os.environ.items() if key != LAUNCHER_PID_VAR}
    try:
        process = subprocess.Popen([sys.executable, "-P", "-m", __name__, str(os.getpid()), repr(grace_seconds)],
                                   stdin=read_end, stdout=subprocess.DEVNULL, env=environ, start_new_session=True)
    finally:
        os.close(read_end)
    spare(process.pid)
    try:
        yield
    finally:
        process.kill()  # before its pipe closes: a launcher that ends well leaves it nothing to do
        process.wait()
        os.close(write_end)


def job_pids(launcher_pid: int) -> set[int]:
    """The live processes that carry `launcher_pid`'s mark, and those in a session one of them leads."""
    mark = f"{LAUNCHER_PID_VAR}={launcher_pid}".encode()
    marked: set[int] = set()
    sessions: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state, _parent, _group, session = (entry / "stat").read_text().rpartition(")")[2].split()[:4]
            environ = (entry / "environ").read_bytes()
        except (OSError, ValueError):
            continue
        if state in ("Z", "X"):
            continue
        sessions[int(entry.name)] = int(session)
        if mark in environ.split(b"\0"):
            marked.add(int(entry.name))
    leaders = {pid for pid in marked if sessions.get(pid) == pid}
    return marked | {pid for pid, session in sessions.items() if session in leaders}


def _keep(launcher_pid: int, grace_seconds: float) -> None:
    """Wait for the launcher's end; then for the job's processes to go, and SIGKILL what is left at the window's
    end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while os.read(0, 4096):
        pass
    deadline = time.monotonic() + grace_seconds
    while job_pids(launcher_pid) and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
    for _ in range(_KILL_PASSES):
        left = job_pids(launcher_pid)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue


if __name__ == "__main__":
    _keep(int(sys.argv[1]), float(sys.argv[2]))
