"""A rank's output costs the launcher bounded memory, is shown live, and a log that cannot be written never
stops the copy (launcher/run/group/terminal_lines.py, output_copy.py; docs/RELIABILITY.md)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launches import clean_environ

from .jobs import script

MIB = 2**20


def peak_kib(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmHWM for {pid}")


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.02)


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(240)
def test_a_50_mib_line_without_a_newline_costs_the_launcher_under_10_mib_and_reaches_the_terminal(start_job,
                                                                                                  figures):
    job = start_job([script("output.py")], {"OUTPUT_CASE": "long-line"})
    job.wait_started(1)
    time.sleep(0.5)
    before = peak_kib(job.pid)
    (job.record_dir / "go").write_text("")
    wait_for(job.record_dir / "written-0")
    time.sleep(0.5)
    after = peak_kib(job.pid)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr[-2000:]
    assert finished.stderr.count("x") >= 50 * MIB
    assert after - before < 10 * 1024, (before, after)
    figures(peak_before_mib=before / 1024, peak_after_mib=after / 1024)


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(240)
def test_a_progress_bar_is_shown_while_the_rank_holds_it_and_redrawn_in_place(start_job):
    job = start_job([script("output.py")], {"OUTPUT_CASE": "bar"})
    job.wait_started(1)
    deadline = time.monotonic() + 30
    while "10%" not in job.output()[1]:  # the rank writes no newline until it sees `go`
        assert time.monotonic() < deadline and job.proc.poll() is None, job.output()[1]
        time.sleep(0.05)
    (job.record_dir / "go").write_text("")
    finished = job.finish()

    shown = (job.workdir / "stderr.txt").read_bytes()  # as written: read_text would turn each \r into \n
    assert finished.returncode == 0, finished.stderr
    assert b"10%\r100%\n" in shown and b"10%\n" not in shown


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(240)
def test_a_log_file_over_the_size_limit_is_said_once_and_every_line_still_reaches_the_terminal(tmp_path):
    # The launcher writes every teed log itself, from the rank's pipe (the rank group, on both paths): the rank never
    # meets the limit, and its stream is drained to the end.
    limit = 1 * MIB
    command = [sys.executable, "-c", "import resource, runpy, sys; "
               f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
               "sys.argv = ['accel-launch', *sys.argv[1:]]; runpy.run_module('launcher', run_name='__main__')",
               "--log-dir", str(tmp_path / "logs"), script("output.py")]
    done = subprocess.run(command, cwd=tmp_path, env=clean_environ({"OUTPUT_CASE": "chatter",
                                                                    "RECORD_DIR": str(tmp_path)}),
                          capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"line {number:09d}" for number in range(3 * MIB // 16)]
    notes = [line for line in done.stderr.splitlines() if "is incomplete" in line]
    assert len(notes) == 1 and notes[0].startswith("accel-launch: rank 0's log ") and "File too large" in notes[0]
    assert "Traceback" not in done.stderr
    logged = next((tmp_path / "logs").glob("*/attempt_0/0/stdout.log"))
    assert logged.stat().st_size == limit
    assert [path.name for path in logged.parent.iterdir() if path.name.endswith(".fifo")] == []

