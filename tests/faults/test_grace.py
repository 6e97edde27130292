"""One grace period on every path that stops ranks, measured with a rank that ignores SIGTERM.

torch elastic on its own waits 30 s on a failure path whatever `--grace-period` says. Each test
here has a rank that only SIGKILL ends, so the time to exit shows the grace period that was used.
"""

from __future__ import annotations

import pytest

from .jobs import script, wait_gone

TWO = ["--nproc-per-node", "2"]
IGNORING = {"IGNORE_TERM": "1"}


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(240)
@pytest.mark.parametrize("grace", [1, 4])
def test_a_failure_stops_a_rank_that_ignores_sigterm_after_the_grace_period(run_job, figures, grace):
    finished, job = run_job(["--grace-period", str(grace), *TWO, script("fail.py")],
                            {**IGNORING, "FAIL_RANK": "1", "FAIL_CODE": "3"})

    assert finished.returncode == 3, finished.stderr
    assert "rank 1 on " in finished.stderr and "failed first, with exit code 3" in finished.stderr
    after_sigterm = finished.ended_at - job.sigterm_time(0)
    assert grace - 0.1 <= after_sigterm < grace + 10, after_sigterm
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=after_sigterm, after_fault=finished.ended_at - job.started_time(1))


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(240)
def test_a_timeout_stops_a_rank_that_ignores_sigterm_after_the_grace_period(run_job, figures):
    # At 8 s the rank (which imports no torch) has surely started and waits in the user's code; the count of
    # started ranks below says so (test_faults.py: a timeout at 3 s, which a rank may not reach).
    finished, job = run_job(["--grace-period", "1", "--timeout", "8", script("ignore_term.py")])

    assert finished.returncode == 124, finished.stderr
    assert "accel-launch: the job ran past --timeout 8s; every rank was stopped" in finished.stderr
    assert 8 <= finished.seconds < 8 + 30
    assert len(job.started_ranks()) == 1
    after_sigterm = finished.ended_at - job.sigterm_time(0)
    assert 0.9 <= after_sigterm < 11, after_sigterm
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=after_sigterm)


@pytest.mark.timeout(240)
# Restarts run on the engine path only.
def test_a_restart_stops_a_rank_that_ignores_sigterm_after_the_grace_period(run_job, figures):
    finished, job = run_job(["--grace-period", "1", "--max-restarts", "1", *TWO, script("flaky.py")], IGNORING)

    assert finished.returncode == 0, finished.stderr
    restarted = min((job.record_dir / f"attempt-1-{rank}").stat().st_mtime for rank in (0, 1))
    to_restart = restarted - job.sigterm_time(0)
    assert 1 <= to_restart < 30, to_restart  # includes the new ranks' start (their import of accelerators)
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=to_restart)
