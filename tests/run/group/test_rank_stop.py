"""Stopping ranks (launcher/run/group/rank_stop.py): the window, the one line of a kill, SIGTERM for a rank still starting."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from launcher.contract.names import PARENT_DEATH_SIGNAL
from launcher.run.scope.job_signals import StopState
from launcher.run.group.rank_stop import signal_for, stop_ranks

SLEEP = "import time; time.sleep(30)"
CATCH_TERM = ("import signal, time; signal.signal(signal.SIGTERM, lambda *_: None); "
              "print('ready', flush=True); time.sleep(30)")
# A rank whose bootstrap has its handlers in place: it handles the parent-death signal.
READY = (f"import signal, time; signal.signal({int(PARENT_DEATH_SIGNAL)}, lambda *_: None); "
         "print('ready', flush=True); time.sleep(30)")


def python(code: str, *args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], start_new_session=True, **kwargs)


@pytest.mark.timeout(30)
def test_a_sigint_to_a_rank_still_in_the_bootstrap_before_its_handlers_is_sent_as_sigterm() -> None:
    starting = python(SLEEP, "launcher.rank.bootstrap")
    ready = python(READY, "launcher.rank.bootstrap", stdout=subprocess.PIPE)
    other = python(SLEEP)
    try:
        assert ready.stdout.readline() == b"ready\n"
        assert signal_for(starting.pid, signal.SIGINT) == signal.SIGTERM
        assert signal_for(ready.pid, signal.SIGINT) == signal.SIGINT
        assert signal_for(other.pid, signal.SIGINT) == signal.SIGINT
        assert signal_for(starting.pid, signal.SIGQUIT) == signal.SIGQUIT
    finally:
        for process in (starting, ready, other):
            process.kill()
            process.wait()


@pytest.mark.timeout(30)
def test_a_rank_that_outlives_the_window_is_killed_and_named_in_one_line(capfd) -> None:
    stubborn = python(CATCH_TERM, stdout=subprocess.PIPE)
    polite = python(SLEEP)
    assert stubborn.stdout.readline() == b"ready\n"

    killed = stop_ranks({3: stubborn, 5: polite}, signal.SIGTERM, 0.5, StopState())

    assert killed == [3]
    assert stubborn.wait(timeout=5) == -signal.SIGKILL and polite.wait(timeout=5) == -signal.SIGTERM
    lines = capfd.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("accel-launch: rank 3 was killed with SIGKILL 0.")
    assert lines[0].endswith(" s after SIGTERM (--grace-period or TORCH_ELASTIC_SHUTDOWN_TIMEOUT: 0.5 s)")
