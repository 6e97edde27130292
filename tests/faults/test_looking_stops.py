"""A stop signal (Ctrl-C) to a command that only looks at a running job, `accel-launch stacks` or `accel-launch
status --watch`, ends the look and never the job: 128+N and one line saying the job goes on, where it said a launch's
"no rank was left running" (docs/CONTRACT.md sections 8 and 9)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launcher.contract.names import STACKS_SIGNAL

from .jobs import script


def look(args: list[str], cwd: Path) -> subprocess.Popen:
    """`accel-launch stacks|status ...`, as a user types it."""
    return subprocess.Popen([sys.executable, "-m", "launcher", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def state(pid: int) -> str:
    """Process `pid`'s state letter (/proc/PID/stat: R, S, D, ...)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def pending(pid: int) -> int:
    """The signals pending for process `pid` as a whole (/proc/PID/status, ShdPnd), as a bit mask."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("ShdPnd:"):
            return int(line.split()[1], 16)
    return 0


@pytest.mark.timeout(180)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_while_stacks_waits_for_a_rank_ends_the_look_and_the_job_goes_on(start_job, sig):
    # Rank 1 waits in the kernel (D state, scripts/uninterruptible.py): the stacks signal stays pending, and
    # `stacks` waits for its dump meanwhile.
    job = start_job(["--nproc-per-node", "2", script("uninterruptible.py")])
    rank = int(job.wait_started(2)[1]["pid"])
    deadline = time.monotonic() + 30
    while state(rank) != "D":
        assert time.monotonic() < deadline, state(rank)
        time.sleep(0.01)
    looking = look(["stacks", str(job.pid)], job.workdir)
    while not pending(rank) & (1 << (STACKS_SIGNAL - 1)):  # stacks asked, and waits for the dump
        assert time.monotonic() < deadline and looking.poll() is None, looking.communicate()
        time.sleep(0.01)
    looking.send_signal(sig)
    out, err = looking.communicate(timeout=30)

    assert looking.returncode == 128 + sig, err
    assert err == f"accel-launch stacks: stopped by {sig.name}; the job goes on\n"
    assert out == ""
    time.sleep(0.5)
    assert job.proc.poll() is None and sorted(job.started_ranks()) == [0, 1]  # the job goes on
    job.send(signal.SIGTERM)
    assert job.finish().returncode == 128 + signal.SIGTERM


@pytest.mark.timeout(180)
def test_ctrl_c_to_status_watch_ends_the_look_and_the_job_goes_on(start_job):
    job = start_job(["--nproc-per-node", "1", script("hang.py")])
    job.wait_started(1)
    looking = look(["status", "--watch", str(job.pid)], job.workdir)
    first = looking.stdout.readline()
    assert first.startswith(f"accel-launch status: job {job.pid} on "), looking.communicate()
    looking.send_signal(signal.SIGINT)
    out, err = looking.communicate(timeout=30)

    assert looking.returncode == 130, err
    assert err == "accel-launch status: stopped by SIGINT; the job goes on\n"
    assert "Traceback" not in out
    time.sleep(0.5)
    assert job.proc.poll() is None and list(job.started_ranks()) == [0]
    job.send(signal.SIGINT)
    assert job.finish().returncode == 130
