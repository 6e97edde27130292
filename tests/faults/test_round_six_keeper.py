"""Nothing outlives a SIGKILLed launcher, whatever a rank's children do (docs/RELIABILITY.md, round six): children
that drop the launcher's mark and leave the rank's session or group are known to the keeper's census, and a keeper
that dies is replaced (launcher/run/scope/job_keeper.py), on both paths."""

from __future__ import annotations

import os
import re
import signal
import time

import psutil
import pytest

from launcher.run.scope.job_keeper import MOST_STARTS

from .jobs import Job, describe, job_processes, script, wait_gone
from .test_launcher_death import GRACE, SLACK

MODES = ("session", "setsid", "setpgid", "daemon")
CENSUS_SECONDS = 2.0  # the keeper's census (once a second) has seen every child while the launcher lived
RESTARTED = re.compile(r"accel-launch: the job's keeper \(pid (\d+)\) died \(killed by SIGKILL\); started another "
                       r"\(pid (\d+)\)")


def start_escapers(start_job) -> Job:
    """A job of one rank per mode (scripts/escape.py), each child checked to be what its mode says."""
    job = start_job(["--nproc-per-node", str(len(MODES)), "--grace-period", str(GRACE), script("escape.py"), *MODES])
    ranks = job.wait_started(len(MODES))
    for facts in ranks.values():
        if facts["mode"] == "daemon":
            continue
        rank, child = int(facts["pid"]), psutil.Process(int(facts["child"]))
        assert "ACCEL_LAUNCHER_PID" not in child.environ()
        expected = {"session": (rank, rank), "setsid": (child.pid, child.pid), "setpgid": (rank, child.pid)}
        assert (os.getsid(child.pid), os.getpgid(child.pid)) == expected[facts["mode"]]
    time.sleep(CENSUS_SECONDS)
    return job


def keeper_pids(job: Job) -> list[int]:
    """The job's keeper processes (the keeper carries the test's marker, not the launcher's)."""
    return [process.pid for process in job_processes(job.marker) if "launcher.run.scope.job_keeper" in _command(process)]


def _command(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # gone since
        return ""


def killed_launcher_leaves_nothing(job: Job, figures) -> None:
    sent = job.send(signal.SIGKILL)
    job.finish(since=sent)

    left = wait_gone(job.marker, GRACE + SLACK)
    assert left == [], describe(left)
    figures(grace=GRACE, gone_after=time.monotonic() - sent)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("launch_path", ["direct", "engine"], indirect=True)
def test_children_that_left_the_ranks_session_group_and_mark_are_gone_within_the_grace_window_after_its_death(
        start_job, figures, launch_path):
    job = start_escapers(start_job)

    killed_launcher_leaves_nothing(job, figures)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("launch_path", ["direct", "engine"], indirect=True)
def test_a_killed_keeper_is_replaced_and_the_launchers_later_death_still_leaves_nothing(
        start_job, figures, launch_path):
    job = start_escapers(start_job)
    [first] = keeper_pids(job)

    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not (said := RESTARTED.search(job.output()[1])) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert said, job.output()[1]
    assert int(said[1]) == first and keeper_pids(job) == [int(said[2])]
    time.sleep(CENSUS_SECONDS)

    killed_launcher_leaves_nothing(job, figures)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)
def test_a_keeper_that_keeps_dying_stops_the_job_saying_so(start_job, launch_path):
    job = start_job(["--nproc-per-node", "1", "--grace-period", str(GRACE), script("escape.py"), "session"])
    job.wait_started(1)

    killed: set[int] = set()
    deadline = time.monotonic() + 60
    while job.proc.poll() is None and time.monotonic() < deadline:
        for pid in set(keeper_pids(job)) - killed:
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.05)
    finished = job.finish()

    assert finished.returncode == 143, finished.stderr
    assert len(killed) == MOST_STARTS
    assert len(RESTARTED.findall(finished.stderr)) == MOST_STARTS - 1
    assert re.search(r"accel-launch: the job's keeper \(pid \d+\) died \(killed by SIGKILL\) and no other could be "
                     rf"started \({MOST_STARTS} keepers were started already\): stopping the job", finished.stderr)
    assert wait_gone(job.marker, GRACE + SLACK) == []
