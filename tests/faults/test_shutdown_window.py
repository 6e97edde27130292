"""The shutdown window is torchrun's (30 s, or TORCH_ELASTIC_SHUTDOWN_TIMEOUT), the same on both paths, a kill
is said in one line, and a SIGINT while ranks are stopped keeps the failing rank's status
(launcher/run/group/rank_stop.py; docs/RELIABILITY.md, "The shutdown window")."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.launches import clean_environ, on_paths

from .jobs import job_processes, script, wait_blocked, wait_gone

# Every test here but the torchrun ones and the restartable job (the engine's own) runs on both launch paths
# (tests/conftest.py, `launch_path`); of the moments of a Ctrl-C while 8 ranks start, the engine path takes those
# while its driver still starts them (later, the moment is each rank's own).
TWO = ["--nproc-per-node", "2"]
TORCHRUN = Path(sys.executable).with_name("torchrun")


def killed_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "killed with SIGKILL" in line]


def started(record_dir: Path, count: int, process: subprocess.Popen) -> None:
    """Wait until `count` ranks of `process` wrote their start files in `record_dir`."""
    deadline = time.monotonic() + 150
    while len(list(record_dir.glob("started-[0-9]"))) < count:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(240)
# The default window's handler takes 6 s: more than the 5 s the ranks got before the window was torchrun's.
@pytest.mark.parametrize(("window", "seconds", "written"), [("1", "2.5", False), (None, "6", True)],
                         ids=["variable-1s-handler-2.5s", "default-30s-handler-6s"])
def test_a_preempted_jobs_checkpoints_get_torchruns_window_and_a_kill_is_said_in_one_line(start_job, figures,
                                                                                            window, seconds, written):
    variable = {} if window is None else {"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": window}
    job = start_job([*TWO, script("slow_term.py")], {**variable, "TERM_SECONDS": seconds, "FAIL_RANK": ""})
    job.wait_started(2)
    sent = job.send(signal.SIGTERM)
    finished = job.finish(since=sent)

    assert finished.returncode == 143, finished.stderr
    assert [(job.record_dir / f"checkpoint-{rank}").exists() for rank in (0, 1)] == [written, written]
    killed = killed_lines(finished.stderr)
    if written:
        assert killed == [], finished.stderr
    else:
        assert len(killed) == 1 and killed[0].startswith("accel-launch: ranks 0, 1 were killed with SIGKILL 1."), killed
        assert killed[0].endswith("after SIGTERM (--grace-period or TORCH_ELASTIC_SHUTDOWN_TIMEOUT: 1 s)")
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(120)
def test_torchrun_kills_the_same_preempted_handlers_after_its_variables_window(tmp_path):
    torchrun = subprocess.Popen([str(TORCHRUN), *TWO, script("slow_term.py")], cwd=tmp_path,
                                env=clean_environ({"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "1", "TERM_SECONDS": "2.5",
                                                   "FAIL_RANK": "", "RECORD_DIR": str(tmp_path)}),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started(tmp_path, 2, torchrun)
        torchrun.send_signal(signal.SIGTERM)
        torchrun.wait(timeout=60)
    finally:
        torchrun.kill()

    assert (tmp_path / "term-0").exists() and not (tmp_path / "checkpoint-0").exists()


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(120)
def test_a_rank_blocked_in_torchs_cpp_ends_at_the_stop_signal_not_after_the_window(start_job):
    # The default window: 30 s. SIGTERM keeps its default action in a rank (launcher/contract/names.py:
    # PARENT_DEATH_SIGNAL); a handler of ours would wait until the C++ call returned, and the rank be killed at 30 s.
    job = start_job([script("blocked_in_cpp.py")])
    wait_blocked(job.record_dir, job.proc)
    sent = job.send(signal.SIGTERM)
    finished = job.finish(since=sent)

    assert finished.returncode == 143, finished.stderr
    assert killed_lines(finished.stderr) == [], finished.stderr
    assert finished.seconds < 10, finished.seconds
    assert wait_gone(job.marker, timeout=5) == []


@pytest.mark.timeout(120)
def test_torchrun_ends_the_same_blocked_rank_at_the_stop_signal(tmp_path):
    torchrun = subprocess.Popen([str(TORCHRUN), script("blocked_in_cpp.py")], cwd=tmp_path,
                                env=clean_environ({"RECORD_DIR": str(tmp_path)}),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_blocked(tmp_path, torchrun)
        sent = time.monotonic()
        torchrun.send_signal(signal.SIGTERM)
        torchrun.wait(timeout=60)
    finally:
        torchrun.kill()

    assert time.monotonic() - sent < 10


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(240)
def test_sigint_while_a_failure_stops_the_ranks_kills_them_at_once_and_keeps_the_failing_ranks_status(start_job):
    job = start_job([*TWO, script("slow_term.py")], {"TERM_SECONDS": "20"})  # the default window: 30 s
    deadline = time.monotonic() + 150
    while not (job.record_dir / "term-0").exists():
        assert time.monotonic() < deadline and job.proc.poll() is None, job.output()[1]
        time.sleep(0.05)
    sent = job.send(signal.SIGINT)
    finished = job.finish(since=sent)

    assert finished.returncode == 3, finished.stderr
    summary = [line for line in finished.stderr.splitlines() if line.startswith("accel-launch: rank 1 on ")]
    assert len(summary) == 1 and "failed first, with exit code 3" in summary[0], finished.stderr
    assert killed_lines(finished.stderr) == [
        "accel-launch: rank 0 was killed with SIGKILL " + killed_lines(finished.stderr)[0].split("SIGKILL ")[1]]
    assert "a stop signal to the launcher cut the wait short" in finished.stderr
    assert finished.seconds < 10 and "Traceback" not in finished.stderr
    assert wait_gone(job.marker, timeout=5) == []


@pytest.mark.timeout(240)
@on_paths(("delay",), {str(delay): delay for delay in (0.0, 0.05, 0.1, 0.25, 0.5)}, on_engine=["0.0", "0.05"])
def test_ctrl_c_while_8_ranks_start_stops_them_without_a_traceback_or_a_fatal_error(start_job, delay):
    job = start_job(["--nproc-per-node", "8", script("hang.py")])
    deadline = time.monotonic() + 150
    while not any("launcher.rank.bootstrap" in " ".join(_cmdline(process)) for process in job_processes(job.marker)):
        assert time.monotonic() < deadline and job.proc.poll() is None, job.output()[1]
        time.sleep(0.01)
    time.sleep(delay)
    sent = job.send(signal.SIGINT)
    finished = job.finish(since=sent)

    assert finished.returncode == 130, finished.stderr
    for word in ("Traceback", "KeyboardInterrupt", "Fatal Python error"):
        assert word not in finished.stderr, finished.stderr
    assert wait_gone(job.marker, timeout=5) == []


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


@pytest.mark.timeout(240)
def test_sigint_while_a_failure_stops_the_ranks_of_a_restartable_job_stops_it_instead_of_restarting(start_job):
    # Restarts run on the engine path only.
    job = start_job(["--max-restarts", "1", *TWO, script("slow_term.py")], {"TERM_SECONDS": "20"})
    deadline = time.monotonic() + 150
    while not (job.record_dir / "term-0").exists():
        assert time.monotonic() < deadline and job.proc.poll() is None, job.output()[1]
        time.sleep(0.05)
    (job.record_dir / "started-0").unlink()
    sent = job.send(signal.SIGINT)
    finished = job.finish(since=sent)

    assert finished.returncode == 130, finished.stderr
    assert "accel-launch: stopped by SIGINT; every rank was stopped" in finished.stderr
    assert not (job.record_dir / "started-0").exists()  # no second attempt started
    assert finished.seconds < 10 and "Traceback" not in finished.stderr
    assert wait_gone(job.marker, timeout=5) == []
