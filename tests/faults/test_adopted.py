"""The launcher is its ranks' subreaper and reaps what it adopts while the job runs (launcher/run/scope/reaper.py)."""

from __future__ import annotations

import pytest

from .jobs import script, wait_gone

@pytest.mark.timeout(240)
def test_the_processes_a_rank_leaves_behind_are_reaped_while_the_job_runs_and_its_ranks_status_kept(run_job):
    finished, job = run_job(["--nproc-per-node", "2", script("zombies.py")], {"ZOMBIE_COUNT": "30"})

    assert finished.returncode == 0, finished.stderr
    assert (job.record_dir / "zombies").read_text() == "0\n"  # 2 s after 30 background commands ended
    assert wait_gone(job.marker, timeout=5) == []


@pytest.mark.usefixtures("launch_path")  # the reaper is the job scope's; a rank's status is each driver's to take
@pytest.mark.timeout(240)
def test_a_failing_rank_keeps_its_status_while_adopted_processes_are_reaped(run_job):
    finished, _ = run_job(["--nproc-per-node", "2", script("fail.py")], {"FAIL_RANK": "1", "FAIL_CODE": "7"})

    assert finished.returncode == 7, finished.stderr
    assert "rank 1 on " in finished.stderr and "failed first, with exit code 7" in finished.stderr
