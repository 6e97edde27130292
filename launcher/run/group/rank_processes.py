"""A node's ranks as processes: each started in a session of its own, each exit seen the moment it happens.

Each rank is a session of its own (as torch elastic starts them), so a stop reaches what the rank started too
(launcher/run/group/rank_stop.py). A thread holds a pidfd for each rank and notes when each becomes readable (the
exit, to the millisecond, whoever waits for it and however long the driver's loop sleeps), so the first rank
to exit is known (launcher/run/failure/rank_failure.py); the driver reaps them with `wait_exits`.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

from launcher.signal_rules import start_thread

__all__ = ["RankProcesses"]


class RankProcesses:
    """The running ranks, by local rank; `close` once they are gone."""

    def __init__(self) -> None:
        self.processes: dict[int, subprocess.Popen] = {}
        self.exited: dict[int, float] = {}  # pid -> monotonic time its exit was seen
        self._unreaped: list[int] = []  # local ranks whose exit was seen and not yet handed to the driver
        self._seen = threading.Condition()
        self._poller = select.poll()
        self._pidfds: dict[int, int] = {}  # pidfd -> local rank
        self._wake_read, self._wake_write = os.pipe()
        self._poller.register(self._wake_read, select.POLLIN)
        self._closed = False
        self._thread = threading.Thread(target=self._watch, name="accel-rank-exits", daemon=True)
        start_thread(self._thread)

    def start(self, local_rank: int, argv: Sequence[str], env: Mapping[str, str], stdout: object, stderr: object,
              pass_fds: Sequence[int] = ()) -> subprocess.Popen:
        """Start one rank in a session of its own and watch for its exit."""
        process = subprocess.Popen(argv, env=dict(env), stdout=stdout, stderr=stderr, pass_fds=tuple(pass_fds),
                                   start_new_session=True)
        self.processes[local_rank] = process
        with self._seen:
            pidfd = os.pidfd_open(process.pid)
            self._pidfds[pidfd] = local_rank
            self._poller.register(pidfd, select.POLLIN)
        os.write(self._wake_write, b"x")  # the watch polls the new pidfd from now on
        return process

    def running(self) -> list[subprocess.Popen]:
        """The ranks whose exit has not been handed to the driver."""
        return [process for process in self.processes.values() if process.returncode is None]

    def wait_exits(self, seconds: float | None) -> list[int]:
        """Wait up to `seconds` (None: as long as it takes) for exits; the local ranks that exited, reaped."""
        with self._seen:
            self._seen.wait_for(lambda: self._unreaped or not self.running(), seconds)
            ended, self._unreaped = self._unreaped, []
        for local_rank in ended:
            self.processes[local_rank].wait()
        return ended

    def send(self, signum: int) -> int:
        """Send `signum` to every running rank's own process (not to what it started); to how many."""
        reached = 0
        for process in self.running():
            process.send_signal(signum)
            reached += process.returncode is None
        return reached

    def close(self) -> None:
        """End the watch (the ranks are gone, or left to the sweep). The wake pipe is closed here, and its read end
        only once the watch has ended: a watch that ended first (a rank's exit woke it just as the group closed) must
        not leave this wake-up writing to a pipe without a reader, whose EPIPE ended the launcher with status 1
        and no word (click's rule for a closed pipe)."""
        if not self._closed:
            self._closed = True
            os.write(self._wake_write, b"x")
            self._thread.join(timeout=1)
            os.close(self._wake_write)
            if not self._thread.is_alive():
                os.close(self._wake_read)

    def _watch(self) -> None:
        try:
            while not self._closed:
                ready = self._poller.poll()
                now = time.monotonic()
                with self._seen:
                    for fd, _ in ready:
                        if fd == self._wake_read:
                            os.read(self._wake_read, 4096)
                            continue
                        local_rank = self._pidfds.pop(fd)
                        self._poller.unregister(fd)
                        os.close(fd)
                        self.exited[self.processes[local_rank].pid] = now
                        self._unreaped.append(local_rank)
                    self._seen.notify_all()
        finally:
            for fd in self._pidfds:
                os.close(fd)
