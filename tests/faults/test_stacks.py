"""A job that hangs or dies says which rank, where and why: every rank's stack on demand (`accel-launch stacks`)
and before --timeout or a failure stops the ranks, a rank stuck compiling named as compiling, a rank whose count of
compiled graphs differs named at the end (docs/CONTRACT.md section 8). The stacks asked for and taken before a stop
run on both paths; what a rank answers (compiling, a handler of its own) and the rank group's note at the end, once
(tests/conftest.py, `launch_path`)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .jobs import Job, script

THREE = ["--nproc-per-node", "3"]


def stacks(pid: int, cwd: Path) -> subprocess.CompletedProcess:
    """`accel-launch stacks PID`, as a user types it."""
    return subprocess.run([sys.executable, "-m", "launcher", "stacks", str(pid)], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def wait_for(path: Path, job: Job) -> None:
    deadline = time.monotonic() + 150
    while not path.exists():
        assert time.monotonic() < deadline and job.proc.poll() is None, job.output()[1]
        time.sleep(0.05)
    time.sleep(1.0)  # the rank reaches the call it stays in


def kept_dump(stderr: str) -> Path:
    found = re.search(r"full dumps in (\S+)\)", stderr)
    assert found, stderr
    return Path(found.group(1))


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(300)
def test_a_rank_that_never_reaches_the_all_reduce_is_named_on_demand_and_at_timeout(start_job, figures):
    job = start_job([*THREE, "--timeout", "30", script("stuck_rank.py")])
    job.wait_started(3)
    time.sleep(1.0)  # ranks 0 and 2 reach the all_reduce
    asked = time.monotonic()
    answered = stacks(job.pid, job.workdir)
    took = time.monotonic() - asked

    assert answered.returncode == 0, answered.stderr
    lines = answered.stdout.splitlines()
    assert lines[1] == "  rank 1 (the odd one out): stuck_rank.py:14 in load_batch", answered.stdout
    assert lines[2].startswith("  ranks 0, 2: stuck_rank.py:21 in <module>, inside all_reduce "
                               "(torch/distributed/distributed_c10d.py:"), answered.stdout
    time.sleep(0.5)
    assert job.proc.poll() is None and len(job.started_ranks()) == 3  # the job goes on
    finished = job.finish()
    assert finished.returncode == 124, finished.stderr
    assert ", taken as the job ran past --timeout 30s, before they are stopped (full dumps in" in finished.stderr
    assert "  rank 1 (the odd one out): stuck_rank.py:14 in load_batch" in finished.stderr
    assert "  ranks 0, 2: stuck_rank.py:21 in <module>, inside all_reduce" in finished.stderr
    dump = kept_dump(finished.stderr)
    assert dump.stat().st_mode & 0o777 == 0o600 and "=== rank 1 (pid" in dump.read_text()
    dump.unlink()
    figures(stacks_seconds=took)


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(240)
def test_a_rank_that_failed_has_the_running_ranks_stacks_printed_before_they_are_stopped(run_job, tmp_path):
    finished, job = run_job(["--nproc-per-node", "2", "--log-dir", str(tmp_path / "logs"), script("fail.py")],
                            {"FAIL_RANK": "1"})

    assert finished.returncode == 3, finished.stderr
    assert "accel-launch: the stacks of the 1 running rank(s) on " in finished.stderr
    assert ", taken as rank 1 failed, before they are stopped" in finished.stderr
    assert "  rank 0: _rank.py:31 in sleep_forever" in finished.stderr
    dump = kept_dump(finished.stderr)
    assert dump.is_relative_to(tmp_path / "logs") and "=== rank 0 (pid" in dump.read_text()


@pytest.mark.timeout(300)
def test_a_rank_stuck_in_a_compile_is_said_to_be_compiling(start_job):
    job = start_job(["--nproc-per-node", "2", "--timeout", "200", script("stuck_compiling.py")])
    wait_for(job.record_dir / "compiling", job)
    answered = stacks(job.pid, job.workdir)

    assert answered.returncode == 0, answered.stderr
    assert "  rank 1: compiling stuck_compiling.py:22 forward (recompile 1)" in answered.stdout, answered.stdout
    assert "  rank 0: stuck_compiling.py:33 in <module>, inside all_reduce" in answered.stdout, answered.stdout
    job.send(signal.SIGTERM)
    assert job.finish().returncode == 143


@pytest.mark.timeout(240)
def test_a_rank_whose_count_of_compiled_graphs_differs_is_named_at_the_end(run_job):
    finished, _ = run_job(["--nproc-per-node", "2", script("compile_counts.py")])

    assert finished.returncode == 0, finished.stderr
    assert ("accel-launch: note: rank 1 compiled 2 graph(s), the other ranks 1 each: code the others did not run, "
            "or a recompile") in finished.stderr


@pytest.mark.timeout(240)
def test_a_program_with_its_own_handler_for_the_signal_keeps_it_and_is_named_as_not_answering(start_job):
    job = start_job(["--nproc-per-node", "2", script("own_stacks_handler.py")])
    job.wait_started(2)
    time.sleep(0.5)
    answered = stacks(job.pid, job.workdir)

    assert answered.returncode == 0, answered.stderr
    for rank in (0, 1):
        assert (f"  rank {rank}: no stack: did not answer SIGRTMIN+27 within 2 s: its program has a handler of its "
                "own") in answered.stdout, answered.stdout
        assert (job.record_dir / f"handled-{rank}").read_text() == "handled\n"
    assert job.proc.poll() is None
    job.send(signal.SIGTERM)
    assert job.finish().returncode == 143


@pytest.mark.timeout(240)
def test_a_stop_signal_while_the_timeouts_stacks_are_taken_hurries_the_stop_and_the_outcome_stays(start_job):
    """The rank's own handler answers nothing, so the launcher waits its 2 s for the rank's stack: the SIGTERM comes
    within that wait."""
    job = start_job(["--nproc-per-node", "1", "--timeout", "3", script("own_stacks_handler.py")])
    asked = job.record_dir / "handled-0"
    deadline = time.monotonic() + 120
    while not asked.exists():
        assert time.monotonic() < deadline and job.proc.poll() is None, job.output()[1]
        time.sleep(0.02)
    job.send(signal.SIGTERM)
    finished = job.finish()

    assert finished.returncode == 124, finished.stderr  # --timeout's status, as when no signal came
    assert "could not be taken" not in finished.stderr and "Traceback" not in finished.stderr
    assert "rank 0: no stack: did not answer" in finished.stderr, finished.stderr  # the report ran to its end
