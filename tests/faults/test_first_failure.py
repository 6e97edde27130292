"""The summary names the rank whose own failure started the teardown, not a peer that failed because of it.

Rank 1 leaves the gloo group and exits 1 while rank 0 waits in an all_reduce with it; rank 0 then fails
with gloo's 'Connection reset/closed by peer' within the same second. Every run must name rank 1: five in the
suite (FAULTS_REPEAT=20 for the twenty of docs/RELIABILITY.md); every ordering of the two exits and of torch's
timestamps is decided in-process by tests/run/failure/test_first_failure.py.
Rank 1 may still be finishing its exit (its interpreter's shutdown) when rank 0's failure starts the
teardown; it is then stopped by the teardown's SIGTERM, and that is the status reported (143).
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

    assert finished.returncode in (1, 143), finished.stderr
    summary = [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: rank ")]
    assert len(summary) == 1 and summary[0].startswith("accel-launch: rank 1 on "), finished.stderr
    assert "rank 1: leaving with exit 1" in finished.stderr.split("last lines of its stderr:")[1]
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=finished.seconds)
