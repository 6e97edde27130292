"""The ranks of a direct launch as processes: started at once, watched for their exits.

Each rank is a session of its own (as torch elastic starts them), so a stop reaches what the rank started
too (launcher/run/rank_stop.py stops them, as on the engine path). Exits are seen through pidfds the moment
they happen, so the first to exit is known to the millisecond.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

__all__ = ["Ranks"]


class Ranks:
    """The running ranks, by local rank."""

    def __init__(self) -> None:
        self.processes: dict[int, subprocess.Popen] = {}
        self.exited: dict[int, float] = {}  # pid -> monotonic time its exit was seen
        self._poller = select.poll()
        self._pidfds: dict[int, int] = {}  # pidfd -> local rank

    def start(self, local_rank: int, argv: Sequence[str], env: Mapping[str, str], stdout: object, stderr: object,
              pass_fds: Sequence[int] = ()) -> subprocess.Popen:
        """Start one rank in a session of its own and watch for its exit."""
        process = subprocess.Popen(argv, env=dict(env), stdout=stdout, stderr=stderr, pass_fds=tuple(pass_fds),
                                   start_new_session=True)
        self.processes[local_rank] = process
        pidfd = os.pidfd_open(process.pid)
        self._pidfds[pidfd] = local_rank
        self._poller.register(pidfd, select.POLLIN)
        return process

    def running(self) -> list[subprocess.Popen]:
        """The ranks whose exit has not been seen."""
        return [process for process in self.processes.values() if process.returncode is None]

    def wait_exits(self, seconds: float | None) -> list[int]:
        """Wait up to `seconds` (None: as long as it takes) for exits; the local ranks that exited."""
        if not self._pidfds:
            return []
        ready = self._poller.poll(None if seconds is None else max(0, int(seconds * 1000)))
        now, ended = time.monotonic(), []
        for pidfd, _ in ready:
            local_rank = self._pidfds.pop(pidfd)
            self._poller.unregister(pidfd)
            os.close(pidfd)
            process = self.processes[local_rank]
            process.wait()
            self.exited[process.pid] = now
            ended.append(local_rank)
        return ended

    def send(self, signum: int) -> int:
        """Send `signum` to every running rank's own process (not to what it started); to how many."""
        reached = 0
        for process in self.running():
            process.send_signal(signum)
            reached += process.returncode is None
        return reached

    def kill(self) -> None:
        """SIGKILL to every running rank's session, and wait for them (an end without a stop: an internal error)."""
        for process in self.running():
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while self._pidfds:
            self.wait_exits(None)
