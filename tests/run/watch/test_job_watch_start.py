"""The watch's thread starts with signals deferred, and a stop that ends its start leaves `close` safe: CI found a
Ctrl-C while 8 ranks started on the engine path ending in the launcher's internal error ("cannot join thread before
it is started"), where the thread had been made and the stop came before its start."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from launcher.run.watch import job_watch
from launcher.run.watch.job_watch import JobWatch


class Stop(Exception):
    """What a stop signal's handler raises in the main thread."""


def test_a_stop_that_ends_the_watchs_start_leaves_close_safe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    def stopped(_thread: threading.Thread) -> None:
        raise Stop

    monkeypatch.setattr(job_watch, "start_thread", stopped)
    watch = JobWatch(tmp_path, "report", dict)
    with pytest.raises(Stop):
        watch.start()
    watch.close()  # nothing to join: no thread started


def test_the_watch_thread_starts_once_and_close_ends_it(tmp_path: Path):
    watch = JobWatch(tmp_path, "report", dict)
    watch.start()
    watch.start()
    watching = [thread for thread in threading.enumerate() if thread.name == "accel-watch"]
    watch.close()

    assert len(watching) == 1 and not watching[0].is_alive()
