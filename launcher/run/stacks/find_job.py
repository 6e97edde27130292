"""Which job `accel-launch stacks` asks: the running ranks of one launcher on this host, given its pid, or the one
job of this user here. A rank is a process of this user that runs the bootstrap with the launcher's stacks folder
in its environment (as it started: /proc/PID/environ); its launcher is its parent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from launcher.errors import NoJobError
from launcher.rank.rank_facts import BOOTSTRAP, bootstrap_rank

__all__ = ["RunningJob", "find_job", "running_jobs"]


@dataclass(frozen=True)
class RunningJob:
    """A launcher and its running ranks (global rank -> pid), and the folder they answer in."""

    launcher_pid: int
    command: str
    folder: Path
    ranks: dict[int, int] = field(default_factory=dict)


def find_job(pid: int | None, command: str = "accel-launch stacks") -> RunningJob:
    """The job of the launcher `pid`, or (None) the one job of this user here; NoJobError naming what to type
    (`command`: the one the user typed)."""
    jobs = running_jobs()
    if pid is not None:
        found = next((job for job in jobs if job.launcher_pid == pid), None)
        if found is None:
            what = "is not running" if not psutil.pid_exists(pid) else "has no ranks of yours running that answer"
            raise NoJobError(f"process {pid} {what}: give the pid of a running accel-launch ({command} without a "
                             "pid lists the jobs here)")
        return found
    if not jobs:
        raise NoJobError("no accel-launch job of yours is running on this host")
    if len(jobs) > 1:
        listed = "; ".join(f"{job.launcher_pid} ({len(job.ranks)} rank{'s' if len(job.ranks) != 1 else ''}: "
                           f"{job.command})" for job in jobs)
        raise NoJobError(f"{len(jobs)} accel-launch jobs of yours run here; give one's pid ({command} PID): {listed}")
    return jobs[0]


def running_jobs() -> list[RunningJob]:
    """This user's jobs on this host, by launcher pid (a process a rank forked is not a rank)."""
    jobs: dict[int, RunningJob] = {}
    candidates = [process for process in psutil.process_iter(["uids", "cmdline", "ppid"])
                  if process.info["uids"] and process.info["uids"].real == os.getuid()
                  and BOOTSTRAP in (process.info["cmdline"] or [])]
    pids = {process.pid for process in candidates}
    for process in candidates:
        info = process.info
        found = bootstrap_rank(process) if info["ppid"] not in pids else None
        if found is None:
            continue
        try:
            launcher = psutil.Process(info["ppid"])
            command = " ".join(launcher.cmdline())
        except psutil.Error:
            continue
        rank, folder = found
        job = jobs.setdefault(launcher.pid, RunningJob(launcher.pid, command, Path(folder)))
        job.ranks[rank] = process.pid
    return [jobs[pid] for pid in sorted(jobs)]
