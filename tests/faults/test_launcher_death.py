"""A launcher's death (SIGKILL: the OOM killer, a scheduler) ends everything its ranks started within the grace
window, whatever they do with SIGTERM (launcher/run/scope/job_keeper.py), on both paths; torchrun beside ours."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from tests.launches import on_paths

from .jobs import describe, script, wait_gone

GRACE = 3.0
SLACK = 4.0  # a loaded 2-core machine: the keeper's last look, and the kernel's teardown
OUTLIVERS = {how: (how, ranks) for how, ranks in (
    ("ignore", 1), ("stuck-handler", 2), ("child", 1), ("setsid-child", 1), ("daemon", 1), ("shell", 1))}


def kill_launcher_after_start(start_job, how: str, ranks: int, command=None):
    """Start the job, wait for its ranks, SIGKILL the launcher; (the job, when the signal was sent)."""
    if command is None:
        job = start_job(["--nproc-per-node", str(ranks), "--grace-period", str(GRACE), script("outlive.py"), how])
    else:
        job = start_job(["--nproc-per-node", str(ranks), script("outlive.py"), how], command=command)
    job.wait_started(ranks)
    time.sleep(1.0)  # the stuck rank is in its collective, the shell's sleeps are running
    sent = job.send(signal.SIGKILL)
    job.finish(since=sent)
    return job, sent


@pytest.mark.timeout(240)
# The job scope's keeper and the ranks' own watch end them, alike on both paths: the engine path takes one case
# (tests/conftest.py, `launch_path`).
@on_paths(("how", "ranks"), OUTLIVERS, on_engine=["ignore"])
def test_everything_a_rank_started_is_gone_within_the_grace_window_after_the_launchers_death(
        start_job, figures, how, ranks):
    job, sent = kill_launcher_after_start(start_job, how, ranks)

    left = wait_gone(job.marker, GRACE + SLACK)
    gone_after = time.monotonic() - sent
    assert left == [], describe(left)
    figures(grace=GRACE, gone_after=gone_after)


@pytest.mark.timeout(120)
def test_a_job_whose_launcher_ends_well_leaves_no_keeper(run_job):
    finished, job = run_job([script("ok.py")])

    assert finished.returncode == 0, finished.stderr
    assert wait_gone(job.marker, 5) == []


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_torchrun_leaves_a_rank_that_ignores_sigterm_running_after_its_death(start_job, figures):
    # torchrun beside ours: its agent's death leaves the rank that ignores SIGTERM for good (no grace window).
    torchrun = (sys.executable, "-m", "torch.distributed.run")
    job, sent = kill_launcher_after_start(start_job, "ignore", 1, command=torchrun)

    left = wait_gone(job.marker, GRACE + SLACK)
    assert left != []
    figures(grace=GRACE, left_after=time.monotonic() - sent, left=len(left))
