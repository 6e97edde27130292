"""When each rank exited (its exit time, to the millisecond), so that the first failure is the cause and not a victim.

torch elastic stamps a failure with whole seconds (or the time it noticed it), so a rank that died of
its peer's exit ("Connection closed") can tie with that peer and be named instead. A thread here holds a
pidfd for each child of the launcher and notes the moment each becomes readable (exit), reaping nothing.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Iterable

from launcher.run.reaper import child_pids

__all__ = ["ExitTimes"]

_DISCOVER_SECONDS = 0.1


class ExitTimes:
    """A context manager that records `pid -> monotonic exit time` for the launcher's children."""

    def __init__(self) -> None:
        self.exited: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="accel-exit-order", daemon=True)

    def __enter__(self) -> ExitTimes:
        if hasattr(os, "pidfd_open"):
            self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=1)

    def first(self, pids: Iterable[int]) -> int | None:
        """The pid among `pids` that exited first, when its exit was seen; else None."""
        seen = [(self.exited[pid], pid) for pid in pids if pid in self.exited]
        return min(seen)[1] if seen else None

    def _watch(self) -> None:
        poller, fds, watched = select.poll(), {}, set()
        try:
            while not self._stop.is_set():
                for pid in child_pids() - watched:
                    watched.add(pid)
                    try:
                        fd = os.pidfd_open(pid)
                    except OSError:
                        continue
                    fds[fd] = pid
                    poller.register(fd, select.POLLIN)
                for fd, _ in poller.poll(_DISCOVER_SECONDS * 1000):
                    self.exited.setdefault(fds[fd], time.monotonic())
                    poller.unregister(fd)
        finally:
            for fd in fds:
                os.close(fd)

