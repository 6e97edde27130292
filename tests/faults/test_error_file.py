"""A rank's error file is untrusted input: whatever a rank leaves there, the launcher reports the rank's
own status, the root cause when a well-formed record gives one, and at most a few KiB of it."""

from __future__ import annotations

import socket

import pytest

from tests.launches import on_paths

from .jobs import launcher_leftovers, script, wait_gone
from .scripts.error_file_cases import CASES

# Every case runs on the direct path. Where the file is, is each path's (its log layout); what is read there, one
# reader's (tests/run/failure/test_root_cause.py takes every case in-process): the engine path takes text that is
# not JSON, a file whose open could block, and a record with the largest message (tests/conftest.py, `launch_path`).
ENGINE_CASES = ("plain text", "a FIFO", "a 20 MB message")


@pytest.mark.timeout(120)
@on_paths(("case", "status"), {case: (case, 7 if index % 2 else 1) for index, case in enumerate(CASES)},
          on_engine=ENGINE_CASES)
def test_whatever_a_rank_leaves_in_its_error_file_the_job_ends_with_its_status_and_one_short_account(
        run_job, figures, tmp_path, case, status):
    temp = tmp_path / "tmp"
    temp.mkdir()
    finished, job = run_job([script("leave_error_file.py"), case, str(status)], {"TMPDIR": str(temp)})

    assert finished.returncode == status, finished.stderr[-2000:]
    first = f"accel-launch: rank 0 on {socket.getfqdn()} failed first, with exit code {status}"  # no other rank
    assert [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: rank ")] == [
        first], finished.stderr[-2000:]
    assert CASES[case][1] in finished.stderr
    assert "internal error" not in finished.stderr and "Traceback" not in finished.stderr
    assert len(finished.stderr.encode()) < 16 << 10
    assert launcher_leftovers(temp) == []
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=finished.seconds, stderr_bytes=len(finished.stderr.encode()))
