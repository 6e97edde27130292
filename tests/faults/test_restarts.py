"""`--max-restarts` with gloo on CPU: the group re-forms, each attempt knows its number and validates again."""

from __future__ import annotations

import ast
import re

import pytest

from .jobs import script, wait_gone


@pytest.mark.timeout(240)
def test_a_restart_re_forms_the_gloo_group_and_tells_each_rank_its_attempt(run_job, figures):
    # Rank 0 of attempt 0 ignores SIGTERM: a grace period of 1 s, not torchrun's 30 s, before it is killed.
    finished, job = run_job(["--nproc-per-node", "2", "--max-restarts", "1", "--grace-period", "1",
                             "--compile-backend", "eager", script("flaky.py")], {"GLOO": "1", "IGNORE_TERM": "1"})

    assert finished.returncode == 0, finished.stderr
    for rank in (0, 1):
        facts = ast.literal_eval((job.record_dir / f"attempt-1-{rank}").read_text())
        # the bootstrap ran again in the restarted rank: the backend is the validated one, not the default
        assert facts == {"attempt": 1, "backend": "eager"}
    assert not list(job.record_dir.glob("attempt-2-*"))
    restarts = [line for line in finished.stderr.splitlines() if "the ranks restart" in line]
    assert len(restarts) == 1 and re.fullmatch(r"accel-launch: rank 1 on \S+ ended with exit code 3; the ranks "
                                                r"restart: attempt 2 of 2 \(--max-restarts 1\)", restarts[0])
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(240)
def test_restarts_that_run_out_end_with_the_last_failure(run_job, figures):
    finished, job = run_job(["--nproc-per-node", "2", "--max-restarts", "1", "--grace-period", "1",
                             script("fail.py")], {"FAIL_RANK": "1", "FAIL_CODE": "5"})

    assert finished.returncode == 5, finished.stderr
    assert "rank 1 on " in finished.stderr and "failed first, with exit code 5" in finished.stderr
    assert "Traceback" not in finished.stderr
    assert [line.split(" ended with ")[1] for line in finished.stderr.splitlines() if "the ranks restart" in line] \
        == ["exit code 5; the ranks restart: attempt 2 of 2 (--max-restarts 1)"]  # none after the last attempt
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(120)
def test_what_an_attempt_left_running_is_swept_before_the_next_attempt_starts(run_job):
    # The first attempt's rank leaves a `sleep 300` in a session of its own, then fails: the group's end
    # (launcher/run/group/rank_group.py: `end`) sweeps it before torch's agent restarts the ranks.
    finished, job = run_job(["--max-restarts", "1", "--grace-period", "2", script("restart_leftover.py")])

    assert finished.returncode == 0, finished.stderr
    assert (job.record_dir / "leftover").read_text() == "gone"


@pytest.mark.timeout(120)
def test_a_rank_in_uninterruptible_sleep_past_torchs_timeout_ends_the_job_as_torchs_check_says(run_job):
    # torch 2.13's agent marks the group unhealthy and restarts nothing; torchrun then exits 0, as if all went
    # well: ours ends with status 1 and names the rank.
    finished, job = run_job(["--nproc-per-node", "2", "--max-restarts", "1", "--grace-period", "2",
                             script("uninterruptible.py")], {"TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT": "1"})

    assert finished.returncode == 1, finished.stderr
    assert ("accel-launch: rank 1 on " in finished.stderr and " stayed in uninterruptible sleep (D state) past "
            "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT (1s)" in finished.stderr), finished.stderr
    assert "the ranks restart" not in finished.stderr
    assert wait_gone(job.marker, timeout=5) == []
