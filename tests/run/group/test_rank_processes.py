"""The watch over a node's ranks (launcher/run/group/rank_processes.py), with real processes: its end never fails."""

from __future__ import annotations

import os
import sys
import types

import pytest

from launcher.run.group import rank_processes
from launcher.run.group.rank_processes import RankProcesses


@pytest.mark.timeout(60)
def test_closing_as_a_rank_exits_ends_the_watch_without_a_broken_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    ranks = RankProcesses()
    process = ranks.start(0, [sys.executable, "-c", "import time; time.sleep(60)"], dict(os.environ), None, None)

    def write_after_the_watch_ended(fd: int, data: bytes) -> int:
        if fd == ranks._wake_write and ranks._closed:
            # The rank exits just as the group closes: its exit wakes the watch, which finds the group closed and
            # ends before the close's own wake-up is written (the order a stopped launcher met once in a full run).
            process.kill()
            ranks._thread.join(10)
            assert not ranks._thread.is_alive()
        return os.write(fd, data)

    module_os = types.SimpleNamespace(**{name: getattr(os, name) for name in dir(os) if not name.startswith("__")})
    module_os.write = write_after_the_watch_ended
    monkeypatch.setattr(rank_processes, "os", module_os)
    ranks.close()  # a BrokenPipeError here ended the launcher with status 1 and no line
    process.wait(10)
    assert process.returncode == -9
