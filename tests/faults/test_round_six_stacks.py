"""Round six (issue 48), the stacks side: what a rank leaves in the launcher's folders is read without ever blocking
(a FIFO, a folder, a link, a huge file), a dump never lands in a file of the program's own, `stacks PID` takes any
number in one line, a stopped rank is said to be stopped, a rank starved of CPU still answers whole; and issue 46's
"what exists is right": a rank that is ending is said to be, the failure's stacks come before the restart line, the
launcher's own threads are left out, the stacks signal has one name (docs/RELIABILITY.md, "Round six")."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from launcher.contract.names import STACKS_DIR_VAR, STACKS_SIGNAL
from launcher.run.failure.rank_failure import tail_lines
from launcher.run.scope.leftovers import PREFIX, sweep_dead_folders
from launcher.run.stacks import dump_file_text, stack_lines, summary_lines
from launcher.rank.compile_state import read_compile_state
from launcher.run.stacks.rank_answers import ask_ranks
from launcher.signal_rules import signal_name

from .jobs import script
from .test_stacks import stacks

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("fifo", "folder", "link", "huge")
SIGNAL = signal_name(STACKS_SIGNAL)


def put(kind: str, path: Path) -> None:
    """A FIFO, a folder, a link to a FIFO, or a 64 GiB sparse file ending in two lines, at `path`."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "link":
        os.mkfifo(path.with_name(path.name + ".fifo"))
        path.symlink_to(path.with_name(path.name + ".fifo"))
    else:
        with open(path, "wb") as huge:
            huge.seek(64 << 30)
            huge.write(b"\nnext to last\nlast line\n")


# A process set up as a rank's bootstrap sets it up (launcher/rank/launcher_link.py): its dump file in the folder the
# first argument names, the watch for its launcher (this test) started; then `ready`, and the code given.
RANK = f"""
import os, sys, time
os.environ[{STACKS_DIR_VAR!r}] = sys.argv[1]
os.environ["ACCEL_LAUNCHER_PID"] = str(os.getppid())
from launcher.rank.launcher_link import answer_stack_requests, die_with_launcher
die_with_launcher()
answer_stack_requests()
def waiting_here():
    open(os.path.join(sys.argv[1], "ready"), "w").close()
    time.sleep(60)
"""


@contextmanager
def rank_process(folder: Path, code: str = "waiting_here()") -> Iterator[subprocess.Popen]:
    """A process as a rank (RANK, then `code`), ready to be asked; killed when the block ends."""
    process = subprocess.Popen([sys.executable, "-c", RANK + code, str(folder)], cwd=ROOT,
                               env={**os.environ, "RANK": "0"}, process_group=0)
    try:
        deadline = time.monotonic() + 30
        while not (folder / "ready").exists():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.02)
        time.sleep(0.1)
        yield process
    finally:
        process.kill()
        process.wait()


# Class 1: what a rank leaves in the launcher's folders is read without blocking.

@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("tamper", ["compile", "stacks"])
def test_what_ranks_put_in_place_of_their_files_is_never_read_to_block_at_timeout_or_on_demand(start_job, tamper):
    job = start_job(["--nproc-per-node", "4", "--timeout", "6", script("tamper_stacks_folder.py")], {"TAMPER": tamper})
    job.wait_started(4)
    answered = subprocess.run([sys.executable, "-m", "launcher", "stacks", str(job.pid)], cwd=job.workdir,
                              capture_output=True, text=True, timeout=40)
    finished = job.finish(timeout=60)

    assert answered.returncode == 0, answered.stderr
    assert finished.returncode == 124 and finished.seconds < 30, finished.stderr
    report = finished.stderr[finished.stderr.index("the stacks of the 4 running rank(s)"):]
    for said in (answered.stdout, report):
        if tamper == "compile":  # the compile state is unreadable, the stacks are there
            assert "  ranks 0, 1, 2, 3: _rank.py:" in said and " in sleep_forever" in said, said
        else:  # the file at the path is not the one its faulthandler writes to: not asked
            for rank, what in enumerate(["is a FIFO, not a regular file", "is a directory, not a regular file",
                                         "is a symbolic link", "is not the one it opened"]):
                assert f"rank {rank}: no stack: its dump file rank-{rank}.stacks in the launcher's folder {what}: " \
                       "not asked" in said, said
    dump = Path(re.search(r"full dumps in (\S+)\)", finished.stderr).group(1))
    dump.unlink()


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", KINDS)
def test_a_ranks_log_its_compile_state_and_an_owner_file_are_read_without_blocking(tmp_path, kind):
    log, state = tmp_path / "stderr.log", tmp_path / "rank-0.compile"
    put(kind, log)
    put(kind, state)
    private = tmp_path / f"{PREFIX}dead"
    private.mkdir()
    put(kind, private / "owner")

    assert tail_lines(log)[-2:] == (("next to last", "last line") if kind == "huge" else ())
    assert read_compile_state(tmp_path, 0) is None
    assert sweep_dead_folders(tmp_path) == [] and private.exists()  # unreadable: counted as alive, kept


# Class 4: a stack dump never lands in the user's files.

@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_rank_that_closed_its_dump_descriptor_is_not_asked_and_no_dump_lands_in_its_own_file(start_job):
    job = start_job(["--nproc-per-node", "2", "--timeout", "6", script("reuse_dump_fd.py")])
    job.wait_started(2)
    answered = stacks(job.pid, job.workdir)
    finished = job.finish(timeout=60)

    assert answered.returncode == 0 and finished.returncode == 124, finished.stderr
    for said in (answered.stdout, finished.stderr):
        assert re.search(r"rank 0: no stack: closed the file its stack dumps go to \(descriptor \d+\): not asked",
                         said), said
        assert re.search(r"rank 1: no stack: closed the file its stack dumps go to, and its descriptor \d+ is now "
                         "another file: not asked, so that no dump lands in a file of its own", said), said
    assert (job.record_dir / "mine-1.txt").read_bytes() == b""  # no dump, on demand or at --timeout
    Path(re.search(r"full dumps in (\S+)\)", finished.stderr).group(1)).unlink()


# Class 6: `accel-launch stacks PID` (and `status PID`) takes any number.

@pytest.mark.parametrize("command", ["stacks", "status"])
@pytest.mark.parametrize("pid", [str(1 << 31), str(1 << 63), "9" * 40])
def test_a_pid_too_large_for_any_process_is_one_line_with_exit_2(cli, pid, command):
    result = cli([command, pid])

    assert result.status == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"accel-launch {command}: error: Invalid value for '[PID]': {pid} is not in the "
                                    "range")


# Class 8: a stopped rank is said to be stopped.

@pytest.mark.timeout(30)
def test_a_stopped_rank_is_said_to_be_stopped_and_is_not_sent_the_signal(tmp_path):
    with rank_process(tmp_path) as process:
        os.kill(process.pid, signal.SIGSTOP)
        while psutil.Process(process.pid).status() != psutil.STATUS_STOPPED:
            time.sleep(0.01)
        try:
            [answer] = ask_ranks({0: process.pid}, tmp_path)
        finally:
            os.kill(process.pid, signal.SIGCONT)
        time.sleep(0.3)
        assert answer.silent is not None and answer.silent.startswith("is stopped (SIGSTOP"), answer.silent
        assert b"Thread 0x" not in (tmp_path / "rank-0.stacks").read_bytes()  # no dump queued for later either


# Class 10: under load.

@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_rank_starved_of_cpu_still_answers_with_its_whole_dump(tmp_path):
    """A rank at SCHED_IDLE sharing one CPU with a busy loop runs only in the loop's gaps: it takes seconds to run
    the handler and is preempted while it writes (the launcher read half dumps, or none, after 0.1 s of quiet)."""
    deep = "\nimport threading\ndef deep(n):\n    return deep(n - 1) if n else waiting_here()\n" \
           "for _ in range(6):\n    threading.Thread(target=deep, args=(80,), daemon=True).start()\ndeep(80)\n"
    with rank_process(tmp_path, deep) as process:
        busy = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        try:
            cpu = min(os.sched_getaffinity(0))
            for pid in (process.pid, busy.pid):
                os.sched_setaffinity(pid, {cpu})
            os.sched_setscheduler(process.pid, os.SCHED_IDLE, os.sched_param(0))
            time.sleep(0.3)
            answers = [ask_ranks({0: process.pid}, tmp_path)[0] for _ in range(3)]  # the first is often quick
        finally:
            busy.kill()
            busy.wait()
    for answer in answers:
        assert answer.dump is not None, answer.silent
        # the launcher's watch thread, and 7 threads 81 frames deep in `deep`
        assert answer.dump.count("hread 0x") == 8 and answer.dump.count(" in deep\n") == 7 * 81, answer.dump[-300:]


# Issue 46 item 6: what exists is right.

@pytest.mark.timeout(30)
def test_a_rank_whose_python_is_ending_is_said_to_be_ending_not_starting(tmp_path):
    with rank_process(tmp_path, f"import faulthandler\nfaulthandler.unregister({int(STACKS_SIGNAL)})\nwaiting_here()") \
            as process:
        [answer] = ask_ranks({0: process.pid}, tmp_path)
    assert answer.silent == (f"no longer catches {SIGNAL}: it is ending (Python's exit undoes faulthandler), or its "
                             "program unregistered it")


@pytest.mark.slow
@pytest.mark.timeout(200)
@pytest.mark.parametrize("launch_path", ["engine"], indirect=True)
def test_after_a_failure_that_restarts_the_ranks_the_stacks_come_before_the_restart_line(run_job, launch_path):
    finished, _ = run_job(["--nproc-per-node", "2", "--max-restarts", "1", script("fail.py")], {"FAIL_RANK": "1"})

    assert finished.returncode == 3, finished.stderr
    stacks_at = finished.stderr.index(", taken as rank 1 failed, before they are stopped")
    assert "  rank 0: _rank.py:" in finished.stderr[stacks_at:], finished.stderr
    assert stacks_at < finished.stderr.index("the ranks restart: attempt 2 of 2"), finished.stderr


@pytest.mark.timeout(30)
def test_the_launchers_own_thread_in_a_rank_is_left_out_of_its_stacks(tmp_path):
    with rank_process(tmp_path) as process:
        [answer] = ask_ranks({0: process.pid}, tmp_path)
    assert answer.dump is not None and "in _watch" in answer.dump  # the watch thread runs, and was dumped
    shown = "\n".join([*summary_lines([answer]), *stack_lines([answer]), dump_file_text([answer], "asked")])
    assert "_watch" not in shown and "launcher_link.py" not in shown and "threading.py" not in shown, shown
    assert "in waiting_here" in shown and "1 thread(s) with Python frames" in shown


def test_the_stacks_signal_has_one_name_in_the_readme_and_the_launchers_lines():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = re.findall(r"SIGRT(?:MIN|MAX)[+-]\d+", readme)
    assert SIGNAL == "SIGRTMIN+27" and len(named) >= 2 and set(named) == {SIGNAL}, named
