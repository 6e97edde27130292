"""Faults in ranks and signals to the launcher: the exit status, how long it takes, and that nothing is left.

Times are generous upper bounds for a loaded 2-core machine; the measured figures go to the junit
report (`figures`) and from there into docs/RELIABILITY.md.
"""

from __future__ import annotations

import signal
import socket
import sys
import time

import psutil
import pytest

from launcher.signal_rules import FORWARDED, STOP, signal_name
from tests.launches import on_paths

from .jobs import describe, error_lines, launcher_leftovers, script, wait_blocked, wait_gone

# Every test here runs on both launch paths (tests/conftest.py, `launch_path`) but where said; of cases handled
# alike, the engine path takes one of each kind.
pytestmark = pytest.mark.usefixtures("launch_path")

TWO = ["--nproc-per-node", "2"]
SIGNALS = {signal_name(sig): sig for sig in (
    signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGALRM, signal.SIGRTMIN + 3, signal.SIGUSR1,
    signal.SIGUSR2, signal.SIGPIPE, signal.SIGWINCH)}
# One of each outcome: a stop the ranks get as itself (two: a user's, a scheduler's) and one they get as SIGTERM,
# forwarded, ignored, default.
ENGINE_SIGNALS = ("SIGINT", "SIGTERM", "SIGALRM", "SIGUSR1", "SIGPIPE", "SIGWINCH")


def assert_nothing_left(job, timeout: float = 10) -> float:
    """No process of the job survives `timeout` seconds; return how long the last one took to go."""
    began = time.monotonic()
    left = wait_gone(job.marker, timeout)
    assert left == [], describe(left)
    return time.monotonic() - began


@pytest.mark.timeout(240)
def test_a_rank_that_exits_nonzero_ends_the_job_with_its_status_rank_and_stderr(run_job, figures):
    finished, job = run_job([*TWO, script("fail.py")], {"FAIL_RANK": "1", "FAIL_CODE": "3"})

    assert finished.returncode == 3, finished.stderr
    assert "rank 1 on " in finished.stderr and "failed first, with exit code 3" in finished.stderr
    assert "[rank1]:rank 1: failing on purpose" in finished.stderr.splitlines()  # streamed, and not repeated:
    assert "  its stderr is above, under [rank1]:" in finished.stderr.splitlines()
    assert "Traceback" not in finished.stderr
    after_fault = finished.ended_at - job.started_time(1)
    assert after_fault < 20
    figures(status=finished.returncode, seconds=after_fault, left_after=assert_nothing_left(job))


@pytest.mark.timeout(240)
@on_paths(("how", "status", "name"),
          {"SIGKILL": ("SIGKILL", 137, "SIGKILL (9)"), "segfault": ("segfault", 139, "SIGSEGV (11)")},
          on_engine=["SIGKILL"])
def test_a_rank_killed_by_a_signal_ends_the_job_with_128_plus_the_signal(run_job, figures, how, status, name):
    finished, job = run_job([*TWO, script("signal_self.py"), how])

    assert finished.returncode == status, finished.stderr
    assert "rank 0 on " in finished.stderr and f"failed first, with signal {name}" in finished.stderr
    after_fault = finished.ended_at - job.started_time(0)
    assert after_fault < 20
    figures(status=finished.returncode, seconds=after_fault, left_after=assert_nothing_left(job))


@pytest.mark.timeout(240)
def test_a_hanging_job_is_ended_by_timeout_with_124_and_a_message(run_job, figures):
    # --timeout counts from the launch: at 3 s the rank may still be importing torch on a loaded machine. A rank
    # that surely started and hangs in the user's code: test_grace.py's timeout case (--timeout 8).
    limit = 3
    finished, job = run_job(["--timeout", str(limit), script("hang.py")])

    assert finished.returncode == 124, finished.stderr
    assert f"accel-launch: the job ran past --timeout {limit}s; every rank was stopped" in finished.stderr
    assert limit <= finished.seconds < limit + 30
    figures(status=finished.returncode, seconds=finished.seconds, left_after=assert_nothing_left(job))


@pytest.mark.timeout(240)
def test_a_rank_that_ignores_sigterm_is_killed_after_the_grace_period(start_job, figures):
    job = start_job(["--grace-period", "1", script("ignore_term.py")])
    job.wait_started(1)
    sent = job.send(signal.SIGTERM)
    finished = job.finish(since=sent)

    assert finished.returncode == 143, finished.stderr
    assert 0.9 <= finished.seconds < 20
    figures(status=finished.returncode, seconds=finished.seconds, left_after=assert_nothing_left(job))


@pytest.mark.timeout(120)
@on_paths(("sig",), SIGNALS, on_engine=ENGINE_SIGNALS)
def test_a_signal_to_a_running_launcher_has_its_one_outcome_and_leaves_nothing(start_job, figures, tmp_path, sig):
    temp = tmp_path / "tmp"
    temp.mkdir()
    job = start_job([*TWO, script("signals.py")], {"TMPDIR": str(temp)})
    job.wait_started(2)
    sent = job.send(sig)
    if sig not in STOP:
        deadline = time.monotonic() + 20
        while sig in FORWARDED and len(list(job.record_dir.glob(f"{signal_name(sig)}-*"))) < 2:
            assert time.monotonic() < deadline, "the signal did not reach every rank"
            time.sleep(0.05)
        time.sleep(0.3)  # long enough for a wrong outcome (a stop, a dead rank) to show
        assert job.proc.poll() is None, job.output()[1]
        (job.record_dir / "release").touch()
    finished = job.finish(timeout=60, since=sent)

    assert "Traceback" not in finished.stderr
    ours = [line for line in finished.stderr.splitlines()
            if line.startswith("accel-launch:") and not line.startswith("accel-launch: 2 rank(s)")]
    if sig in STOP:
        assert finished.returncode == 128 + sig, finished.stderr
        assert ours == [f"accel-launch: stopped by {signal_name(sig)}; every rank was stopped"], finished.stderr
        assert finished.seconds < 20
    else:
        assert finished.returncode == 0, finished.stderr
        assert ours == [], finished.stderr
        received = {path.name: path.read_text().count("received") for path in job.record_dir.glob("SIG*")}
        expected = {f"{signal_name(sig)}-{rank}": 1 for rank in (0, 1)} if sig in FORWARDED else {}
        assert received == expected
    assert launcher_leftovers(temp) == []
    figures(status=finished.returncode, seconds=finished.seconds, left_after=assert_nothing_left(job))


# `nohup accel-launch ...` and `accel-launch ... &` in a script: the launcher starts with the signal ignored.
STARTED_IGNORING = ("import os, signal, sys; signal.signal(signal.{}, signal.SIG_IGN); "
                    "os.execv(sys.executable, [sys.executable, '-m', 'launcher', *sys.argv[1:]])")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", ["SIGHUP", "SIGINT"])
def test_a_stop_signal_the_launcher_was_started_ignoring_stays_ignored(start_job, sig):
    job = start_job([*TWO, script("signals.py")], command=(sys.executable, "-c", STARTED_IGNORING.format(sig)))
    job.wait_started(2)
    job.send(getattr(signal, sig))
    time.sleep(0.3)  # long enough for a stop to start
    assert job.proc.poll() is None, job.output()[1]
    (job.record_dir / "release").touch()
    finished = job.finish(timeout=60)

    assert finished.returncode == 0, finished.stderr
    assert [line for line in finished.stderr.splitlines() if line.startswith("accel-launch:")
            and not line.startswith("accel-launch: 2 rank(s)")] == [], finished.stderr
    assert_nothing_left(job)


@pytest.mark.timeout(120)
def test_a_second_stop_signal_kills_what_is_left_at_once_and_the_first_names_the_outcome(start_job, figures):
    job = start_job(["--grace-period", "60", script("ignore_term.py")])
    job.wait_started(1)
    sent = job.send(signal.SIGTERM)
    time.sleep(0.5)
    job.send(signal.SIGINT)
    finished = job.finish(since=sent)

    assert finished.returncode == 143, finished.stderr
    assert "accel-launch: stopped by SIGTERM; every rank was stopped" in finished.stderr
    assert "Traceback" not in finished.stderr
    assert finished.seconds < 20  # not the 60 s grace period
    figures(status=finished.returncode, seconds=finished.seconds, left_after=assert_nothing_left(job))


def alive(pid: int) -> bool:
    """Whether `pid` is a running process (a zombie is not: it has ended and waits to be reaped)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


GRANDCHILDREN = {"same-group": [], "own-session": ["--setsid"]}


@pytest.mark.timeout(240)
# A rank with a SIGTERM handler of its own: the launcher's death still takes its `setsid` grandchild along (the
# parent-death signal is not SIGTERM, so the script's handler does not replace the launcher's). What ends them is
# the job scope's keeper and the ranks' own watch, alike on both paths.
@on_paths(("session",), {**GRANDCHILDREN, "own-session-own-handler": ["--setsid", "--own-handler"]},
          on_engine=["same-group"])
def test_sigkill_to_the_launcher_takes_its_ranks_and_their_children_along(start_job, figures, session):
    job = start_job([*TWO, script("grandchild.py"), "hang", *session])
    grandchildren = [int(facts["grandchild"]) for facts in job.wait_started(2).values()]
    sent = job.send(signal.SIGKILL)
    job.finish(since=sent)

    gone_after = assert_nothing_left(job, timeout=10)
    assert not any(alive(pid) for pid in grandchildren)
    figures(status=-9, seconds=time.monotonic() - sent, left_after=gone_after)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)  # the rank's own watch of its parent
def test_sigkill_to_the_launcher_ends_a_rank_blocked_in_torchs_cpp(start_job, figures):
    # The rank stays in a store's connect for up to 100 s, where the parent-death signal's handler (Python's)
    # cannot run: the rank's thread that watches whether the launcher is still its parent
    # (launcher/rank/launcher_link.py) ends it.
    job = start_job([script("blocked_in_cpp.py")])
    wait_blocked(job.record_dir, job.proc)
    sent = job.send(signal.SIGKILL)
    job.finish(since=sent)

    gone_after = assert_nothing_left(job, timeout=10)
    figures(status=-9, seconds=time.monotonic() - sent, left_after=gone_after)


@pytest.mark.timeout(240)
# The end of the group takes one in the rank's group (on both paths); the end-of-job sweep, the job scope's, one
# in a session of its own.
@on_paths(("session",), GRANDCHILDREN, on_engine=["same-group"])
def test_a_grandchild_a_rank_left_running_is_gone_when_the_launch_ends(run_job, figures, session):
    finished, job = run_job([script("grandchild.py"), *session])

    assert finished.returncode == 0, finished.stderr
    assert not alive(int(job.started_ranks()[0]["grandchild"]))
    figures(status=finished.returncode, seconds=finished.seconds, left_after=assert_nothing_left(job, timeout=0))


@pytest.mark.timeout(60)
def test_a_busy_master_port_is_refused_naming_host_and_port(run_job, figures):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        finished, job = run_job(["--master-port", str(port), script("ok.py")])

    assert finished.returncode == 2, finished.stderr
    assert error_lines(finished.stderr) == [
        f"accel-launch: error: --master-port {port} on 127.0.0.1 is busy (Address already in use); "
        "pick another port or leave --master-port out to get a free one"
    ]
    assert job.started_ranks() == {}
    figures(status=finished.returncode, seconds=finished.seconds, left_after=assert_nothing_left(job, timeout=0))


@pytest.mark.timeout(240)
def test_sixteen_ranks_on_two_cores_all_succeed(run_job, figures):
    finished, job = run_job(["--nproc-per-node", "16", script("ok.py")], timeout=200)

    assert finished.returncode == 0, finished.stderr
    assert sorted(job.started_ranks()) == list(range(16))
    figures(status=finished.returncode, seconds=finished.seconds, left_after=assert_nothing_left(job))


@pytest.mark.timeout(240)
def test_two_launches_at_once_without_master_port_both_succeed(start_job, figures):
    jobs = [start_job([script("record.py"), "--wait-release"], {"RECORD_VARS": "MASTER_PORT"}) for _ in range(2)]
    for job in jobs:
        job.wait_started(1)  # both jobs' ranks are alive at once here
    for job in jobs:
        (job.record_dir / "release").touch()
    finished = [job.finish() for job in jobs]

    assert [f.returncode for f in finished] == [0, 0], [f.stderr for f in finished]
    ports = {job.started_ranks()[0]["env_MASTER_PORT"] for job in jobs}
    assert len(ports) == 2, ports
    figures(status=0, seconds=max(f.seconds for f in finished),
            left_after=max(assert_nothing_left(job) for job in jobs))


@pytest.mark.timeout(240)
def test_sigint_to_one_launch_leaves_the_other_running(start_job, figures):
    stopped, other = (start_job([script("record.py"), "--wait-release"]) for _ in range(2))
    stopped.wait_started(1)
    other_ranks = other.wait_started(1)
    sent = stopped.send(signal.SIGINT)
    first = stopped.finish(since=sent)
    assert first.returncode == 130, first.stderr
    assert_nothing_left(stopped)

    assert other.proc.poll() is None
    assert all(psutil.pid_exists(int(facts["pid"])) for facts in other_ranks.values())
    (other.record_dir / "release").touch()
    second = other.finish()
    assert second.returncode == 0, second.stderr
    figures(status=first.returncode, seconds=first.seconds, left_after=assert_nothing_left(other))
