"""The first stop signal names the outcome (issue 37): SIGTERM then SIGINT 20 ms later ends as SIGTERM (143), on
both paths, though Python runs the pending SIGINT's handler first (launcher/signal_rules.py, `_first_arrived`)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launches import on_paths

from .jobs import script, wait_gone

ROOT = Path(__file__).resolve().parents[2]
PAIRS = {"term-then-int": (signal.SIGTERM, signal.SIGINT, 143), "hup-then-int": (signal.SIGHUP, signal.SIGINT, 129),
         "int-then-term": (signal.SIGINT, signal.SIGTERM, 130)}


@pytest.mark.timeout(120)
# Which came first is signal_rules' (the same on both paths); the engine path takes one pair (tests/conftest.py).
@on_paths(("first", "second", "status"), PAIRS, on_engine=["term-then-int"])
def test_two_stop_signals_20_ms_apart_end_as_the_first(start_job, figures, first, second, status):
    job = start_job(["--grace-period", "5", script("ignore_term.py")])
    job.wait_started(1)
    sent = job.send(first)
    time.sleep(0.02)
    job.send(second)
    finished = job.finish(since=sent)

    assert finished.returncode == status, finished.stderr
    assert f"stopped by {first.name}" in finished.stderr
    assert wait_gone(job.marker, 10) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("first", "second"), [("SIGTERM", "SIGINT"), ("SIGHUP", "SIGINT"), ("SIGINT", "SIGTERM")])
def test_the_stop_action_gets_the_first_of_two_pending_stop_signals(first, second):
    ran = subprocess.run([sys.executable, script("two_signals.py"), first, second], capture_output=True, text=True,
                         timeout=30, cwd=ROOT)

    assert ran.stdout.split() == [first], ran.stderr
