"""`accel-launch status [PID]`: one row per rank of the job it finds (as `stacks` finds one), the odd ones first,
one line and exit 2 when there is none (the job itself is faked at the process scan: its ranks are this process,
their progress files written by the rank's own writer)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from launcher.contract.names import PROGRESS_FILE
from launcher.rank.progress import _Progress
from launcher.run.stacks import find_job
from launcher.run.stacks.find_job import RunningJob


def progress(folder: Path, rank: int, steps: int) -> None:
    record = _Progress(os.open(folder / PROGRESS_FILE.format(rank=rank), os.O_RDWR | os.O_CREAT, 0o600))
    for _ in range(steps):
        record.stepped(None, (), {})


def test_without_a_job_it_says_so_in_one_line_with_exit_2(cli, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(find_job, "running_jobs", lambda: [])
    result = cli(["status"])

    assert result.status == 2
    assert result.stderr == "accel-launch status: error: no accel-launch job of yours is running on this host\n"


def test_each_rank_is_one_row_and_the_odd_one_comes_first(cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for rank, steps in ((0, 7), (1, 0), (2, 7)):
        progress(tmp_path, rank, steps)
    ranks = dict.fromkeys((0, 1, 2), os.getpid())
    monkeypatch.setattr(find_job, "running_jobs", lambda: [RunningJob(4242, "accel-launch train.py", tmp_path, ranks)])
    result = cli(["status", "4242"])

    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("accel-launch status: job 4242 on ") and "3 rank(s): accel-launch train.py" in lines[0]
    columns = [re.split(r"\s{2,}", line) for line in lines[1:]]
    assert columns[0] == ["rank", "host", "pid", "phase", "steps", "s/step", "work %", "last step", "cpu %", "memory"]
    assert [row[0] for row in columns[1:]] == ["1", "0", "2"]
    assert [row[3:5] for row in columns[1:]] == [["importing (odd)", "0"], ["training", "7"], ["training", "7"]]
    assert all(row[-1].endswith(" MiB") for row in columns[1:])
