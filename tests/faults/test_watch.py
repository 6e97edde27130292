"""A job going wrong is seen as it happens, with no change to the script and no --timeout (docs/CONTRACT.md section
9): a rank that makes the others wait step after step is named once, alone, with the frame it spends the time in;
a clean run with a checkpoint on rank 0 and evaluations on every rank raises no alarm; a rank stuck in a function
of its own while the others wait in the all_reduce is named with its frame, the grouped stacks after, and
`accel-launch status` shows it as the odd one out; a rank stuck compiling is said to be compiling, not hung; a rank
that recompiles alone after the first step is named while it compiles, and ranks that compile alike are not; with
--on-hang stop the job ends as at --timeout (exit 124), on the engine path (the watch lives in the rank group both
paths share)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .jobs import Job, script

THREE = ["--nproc-per-node", "3"]
DDP = script("watch_ddp.py")
SLOW = "is slow, the other ranks wait for it"
HUNG = "no rank finished a step for"


def wait_for_line(job: Job, text: str, seconds: float) -> tuple[str, float]:
    """The first line of the launcher's stderr holding `text`, and when it came (fails after `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        found = [line for line in job.output()[1].splitlines() if text in line]
        if found:
            return found[0], time.monotonic()
        assert time.monotonic() < deadline and job.proc.poll() is None, job.output()[1]
        time.sleep(0.1)


def step_of(job: Job, rank: int) -> int:
    path = job.record_dir / f"steps-{rank}"
    return int(path.read_text() or 0) if path.exists() else 0


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_rank_with_more_work_every_step_is_named_alone_within_20_steps(start_job, figures):
    job = start_job([*THREE, DDP], {"WATCH_SLOW_RANK": "1", "WATCH_SLOW_SECONDS": "0.15", "WATCH_STEPS": "30"})
    line, _ = wait_for_line(job, SLOW, 150)
    named_at = step_of(job, 1)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert named_at <= 20, (named_at, line)
    assert line.startswith("accel-launch: rank 1 on "), line
    assert "; it spends the time in watch_ddp.py:" in line and line.endswith(" in load_batch"), line
    assert [text for text in finished.stderr.splitlines() if SLOW in text] == [line]  # once, and rank 1 alone
    assert HUNG not in finished.stderr
    figures(named_at_step=named_at)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_clean_run_with_a_checkpoint_and_evaluations_raises_no_alarm(run_job):
    finished, _job = run_job([*THREE, DDP], {"WATCH_STEPS": "30", "WATCH_EVAL_EVERY": "10",
                                             "WATCH_CHECKPOINT_SECONDS": "2", "WATCH_EVAL_SECONDS": "0.5"})

    assert finished.returncode == 0, finished.stderr
    assert SLOW not in finished.stderr and HUNG not in finished.stderr, finished.stderr


def status(pid: int, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "launcher", "status", str(pid)], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_stuck_rank_is_named_with_its_frame_without_a_timeout_and_status_shows_it_first(start_job, figures):
    job = start_job([*THREE, DDP], {"WATCH_STUCK_RANK": "1", "WATCH_STUCK_STEP": "6", "WATCH_STEPS": "40"})
    job.wait_started(3)
    while step_of(job, 0) < 5:
        assert job.proc.poll() is None, job.output()[1]
        time.sleep(0.1)
    stuck = time.monotonic()
    time.sleep(2.0)
    shown = status(job.pid, job.workdir)
    line, said = wait_for_line(job, HUNG, 150)
    time.sleep(1.0)  # the grouped stacks follow the line
    stderr = job.output()[1]

    assert shown.returncode == 0, shown.stderr
    rows = shown.stdout.splitlines()
    assert rows[1].split()[:3] == ["rank", "host", "pid"], shown.stdout
    assert rows[2].split()[0] == "1" and "(odd)" in rows[2], shown.stdout  # the odd one out first
    assert [re.split(r"\s{2,}", row)[3:5] for row in rows[2:]] == [["training (odd)", "5"], ["waiting", "5"],
                                                                     ["waiting", "5"]], shown.stdout
    assert said - stuck < 90
    assert "rank 1 on " in line and "is not waiting in a collective: watch_ddp.py:" in line, line
    assert " in load_batch; ranks 0, 2 wait in the backward pass (DDP's all_reduce)" in line, line
    assert "  rank 1 (the odd one out): watch_ddp.py:" in stderr
    assert stderr.count(HUNG) == 1 and job.proc.poll() is None  # once per stall; the job goes on
    figures(hang_named_seconds=said - stuck)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_on_hang_stop_ends_the_job_as_timeout_does_on_the_engine_path(run_job):
    finished, _job = run_job(["--nproc-per-node", "2", "--on-hang", "stop", DDP],
                             {"ACCEL_LAUNCH_PATH": "engine", "WATCH_STUCK_RANK": "0", "WATCH_STUCK_STEP": "4"})

    assert finished.returncode == 124, finished.stderr
    assert "rank 0 on " in finished.stderr and "is not waiting in a collective: watch_ddp.py:" in finished.stderr
    assert ", taken as the job hung (--on-hang stop), before they are stopped" in finished.stderr
    assert finished.stderr.rstrip().endswith("the job hung (--on-hang stop); every rank was stopped"), finished.stderr


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_rank_stuck_compiling_is_said_to_be_compiling_and_on_hang_stop_does_not_stop_it(start_job):
    job = start_job(["--nproc-per-node", "2", "--on-hang", "stop", script("watch_compiling.py")])
    job.wait_started(2)
    line, _ = wait_for_line(job, HUNG, 150)
    time.sleep(2.0)

    assert "rank 1 on " in line and " is compiling graph 1 of watch_compiling.py:" in line and " forward, not hung" \
        in line, line
    assert "rank 0 waits in all_reduce" in line, line
    assert job.proc.poll() is None  # compiling is no hang: --on-hang stop leaves the job running


LONE = " compiles alone ("


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_rank_that_recompiles_alone_is_named_while_it_compiles_once(start_job, figures):
    job = start_job(["--nproc-per-node", "2", script("watch_lone_compile.py")], {"WATCH_ALONE": "1"})
    job.wait_started(2)
    while step_of(job, 1) < 3:
        assert job.proc.poll() is None, job.output()[1]
        time.sleep(0.05)
    stepped = time.monotonic()
    line, said = wait_for_line(job, LONE, 60)
    steps_then = (step_of(job, 0), step_of(job, 1))
    time.sleep(1.5)  # a second look at the same compile says nothing more
    (job.record_dir / "go").touch()
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert steps_then == (3, 3)  # said while rank 1 compiled, rank 0 waiting for it
    assert re.fullmatch(r"accel-launch: note: rank 1 on \S+ compiles alone \(watch_lone_compile\.py:\d+ forward, "
                        r"recompile 1\) while the other ranks wait for it; TORCH_LOGS=recompiles says why", line), line
    assert [text for text in finished.stderr.splitlines() if LONE in text] == [line]
    figures(lone_compile_named_seconds=said - stepped)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_ranks_that_compile_the_same_graphs_say_nothing_though_one_is_slower_at_the_first(run_job):
    finished, job = run_job(["--nproc-per-node", "2", script("watch_lone_compile.py")],
                            {"WATCH_FIRST_SECONDS": "3", "WATCH_RECOMPILE_SECONDS": "2"})

    assert finished.returncode == 0, finished.stderr
    assert (step_of(job, 0), step_of(job, 1)) == (8, 8)
    assert LONE not in finished.stderr, finished.stderr
