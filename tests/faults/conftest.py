"""Fixtures for the fault tests: jobs that are always cleaned up, and figures for docs/RELIABILITY.md."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from .jobs import Finished, Job

StartJob = Callable[..., Job]


@pytest.fixture
def start_job(tmp_path: Path) -> Iterator[StartJob]:
    """Start `python -m launcher ARGS` in the background (in a fresh directory per job); kill leftovers at the end."""
    jobs: list[Job] = []

    def start(args: Sequence[str], env: Mapping[str, str] | None = None, files: Mapping[str, str] | None = None,
              command: Sequence[str] = (sys.executable, "-m", "launcher")) -> Job:
        workdir = tmp_path / f"job{len(jobs)}"
        workdir.mkdir()
        job = Job(args, workdir, env or {}, command, files)
        jobs.append(job)
        return job

    yield start
    for job in jobs:
        job.close()


RunJob = Callable[..., tuple[Finished, Job]]


@pytest.fixture
def run_job(start_job: StartJob) -> RunJob:
    """Run a launch to its end: (how it finished, the job)."""

    def run(args: Sequence[str], env: Mapping[str, str] | None = None, files: Mapping[str, str] | None = None,
            timeout: float = 150) -> tuple[Finished, Job]:
        job = start_job(args, env, files)
        return job.finish(timeout), job

    return run


@pytest.fixture
def figures(record_property: Callable[[str, object], None]) -> Callable[..., None]:
    """Record measured figures (exit status, seconds) in the junit report, from which RELIABILITY.md is written."""

    def record(**values: object) -> None:
        for name, value in values.items():
            record_property(name, round(value, 2) if isinstance(value, float) else value)

    return record
