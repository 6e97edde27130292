"""Adopted processes are reaped during the job, and a rank's exit status is never taken (launcher/run/scope/reaper.py)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest


def wait_zombie(pid: int) -> None:
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.mark.timeout(30)
def test_an_ended_process_that_leads_no_session_is_reaped_and_a_session_leader_like_a_rank_is_left() -> None:
    from launcher.run.scope.reaper import reap_adopted

    rank = subprocess.Popen(["sh", "-c", "exit 7"], start_new_session=True)
    adopted = subprocess.Popen(["true"])
    wait_zombie(rank.pid)
    wait_zombie(adopted.pid)

    reaped = reap_adopted()

    assert adopted.pid in reaped and rank.pid not in reaped
    assert rank.wait(timeout=5) == 7
