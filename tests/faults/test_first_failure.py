"""The summary names the rank whose own failure started the teardown, not a peer that failed because of it.

Rank 1 leaves the gloo group and exits 1 while rank 0 waits in an all_reduce with it; rank 0 then fails
with gloo's 'Connection reset/closed by peer' within the same second. Every run must name rank 1: five in the
suite (FAULTS_REPEAT=20 for the twenty of docs/RELIABILITY.md); every ordering of the two exits and of torch's
timestamps is decided in-process by tests/run/failure/test_first_failure.py. Rank 1 leaves with os._exit: a
rank still in its interpreter's shutdown when its victim's failure ends the job did not fail first, and is not
named (what a rank wrote never decides it). And a rank whose own stderr says "Connection reset by peer" is
named when it failed first.
"""

from __future__ import annotations

import os

import pytest

from .jobs import script, wait_gone

# Every test here runs on both launch paths (tests/conftest.py, `launch_path`).
pytestmark = pytest.mark.usefixtures("launch_path")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("run", range(int(os.environ.get("FAULTS_REPEAT", "5"))))
def test_the_first_failure_is_the_culprit_not_its_victim(run_job, figures, run):
    finished, job = run_job(["--nproc-per-node", "2", script("victim.py")], {"CULPRIT": "1"})

    assert finished.returncode == 1, finished.stderr
    summary = [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: rank ")]
    assert len(summary) == 1 and summary[0].startswith("accel-launch: rank 1 on "), finished.stderr
    assert "[rank1]:rank 1: leaving with exit 1" in finished.stderr.splitlines()
    # the victim failed too, when its peer's loss reached it before it was stopped, else it was stopped
    assert summary[0].endswith(("; rank 0 failed too", "; the other ranks were stopped")), summary
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(240)
# One rank fails, the other waits: no race between exits; what its stderr says is read alike on both paths.
@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)
def test_a_rank_that_writes_connection_reset_by_peer_and_fails_first_is_named_with_its_status(run_job):
    finished, _ = run_job(["--nproc-per-node", "2", script("fail.py")],
                          {"FAIL_RANK": "1", "FAIL_CODE": "7", "FAIL_SAYS": "Connection reset by peer; Broken pipe"})

    assert finished.returncode == 7, finished.stderr
    summary = [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: rank ")]
    assert summary == [summary[0]] and summary[0].startswith("accel-launch: rank 1 on "), finished.stderr
    assert "failed first, with exit code 7" in summary[0]


@pytest.mark.timeout(240)
def test_ranks_failing_alike_are_each_shown_once_and_named_as_failed_not_stopped(run_job):
    finished, job = run_job(["--nproc-per-node", "3", script("fail.py")], {"FAIL_RANK": "all", "FAIL_CODE": "4"})

    assert finished.returncode == 4, finished.stderr
    lines = finished.stderr.splitlines()
    for rank in (0, 1, 2):
        assert lines.count(f"[rank{rank}]:rank {rank}: failing on purpose") == 1, finished.stderr
    summary, = (line for line in lines if line.startswith("accel-launch: rank "))
    first = int(summary.split()[2])
    others = sorted({0, 1, 2} - {first})
    assert summary.endswith(f"failed first, with exit code 4; ranks {others[0]} and {others[1]} failed too")
    assert lines[lines.index(summary) + 1] == f"  its stderr is above, under [rank{first}]:"
    assert wait_gone(job.marker, timeout=5) == []
