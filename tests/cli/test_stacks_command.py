"""`accel-launch stacks [PID]` finds the job it asks: the one of this user here, a list to choose from when there
are several, one line and exit 2 when there is none (the job itself is faked at the process scan)."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.run.stacks import find_job
from launcher.run.stacks.find_job import RunningJob


def jobs(*pids: int) -> list[RunningJob]:
    return [RunningJob(pid, f"accel-launch --nproc-per-node 2 train{pid}.py", Path("/nowhere"), {0: 1, 1: 2})
            for pid in pids]


def test_without_a_job_it_says_so_in_one_line_with_exit_2(cli, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(find_job, "running_jobs", lambda: [])
    result = cli(["stacks"])

    assert result.status == 2
    assert result.stderr == "accel-launch stacks: error: no accel-launch job of yours is running on this host\n"


def test_with_several_jobs_it_lists_them_to_choose_from(cli, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(find_job, "running_jobs", lambda: jobs(101, 202))
    result = cli(["stacks"])

    assert result.status == 2 and len(result.stderr.splitlines()) == 1
    assert "2 accel-launch jobs of yours run here; give one's pid (accel-launch stacks PID): 101 (2 ranks: " \
           "accel-launch --nproc-per-node 2 train101.py); 202 (2 ranks: " in result.stderr


def test_a_pid_that_is_not_a_running_launcher_is_one_line_with_exit_2(cli, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(find_job, "running_jobs", lambda: jobs(101))
    result = cli(["stacks", "1"])

    assert result.status == 2
    assert result.stderr.startswith("accel-launch stacks: error: process 1 has no ranks of yours running")


@pytest.mark.parametrize("pid", ["x", "0", "-3"])
def test_a_pid_that_is_not_a_number_is_one_line_with_exit_2(cli, pid: str):
    result = cli(["stacks", pid])

    assert result.status == 2 and len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
