"""A limit is worded as a limit (docs/RELIABILITY.md): a real launch under `prlimit` (an open-file limit, an
address-space limit, a file-size limit that leaves no usable folder for temporary files) ends in one line naming
the limit, exit status 2, no internal error and no hang. The limits are checked before either path starts, but for
the address space, which only the engine path's torch needs: that test runs on both (tests/conftest.py). Only what
the launch cannot do without refuses it: a file-size limit of a few KiB runs the job as torchrun runs it, its logs
left incomplete with one line each (round six)."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launches import clean_environ, on_paths

from .jobs import assert_refused, error_lines, launcher_leftovers, script

MIB = 1 << 20
KIB = 1 << 10
# 2 ranks of 2,000 lines of 100 bytes each on stdout, then WRITE_BYTES (if set) to a file of their own.
# Each line is one write of 100 bytes (under PIPE_BUF, so whole): a rank's stdout is the launcher's own pipe, as
# under torchrun, and an unbuffered `print` (PYTHONUNBUFFERED=1) writes a line and its newline apart, which another
# rank's line could come between (seen in CI: line 0 of rank 1 ending inside a line of rank 0).
TALKER = """import os, sys
rank = os.environ["RANK"]
for number in range(2000):
    sys.stdout.write(f"rank {rank} line {number:06d} " + "x" * 80 + "\\n")
    sys.stdout.flush()
if os.environ.get("WRITE_BYTES"):
    with open(f"own-{rank}.bin", "wb") as handle:
        handle.write(bytes(int(os.environ["WRITE_BYTES"])))
"""
# name: (the file-size limit, --log-dir given, bytes each rank writes to its own file, the status ours and torchrun's)
SMALL_FILE_SIZES = {
    "64 KiB": (64 * KIB, False, 0, 0),
    "4 KiB, --log-dir": (4 * KIB, True, 0, 0),
    "64 KiB, a rank's own file past it": (64 * KIB, False, 100 * KIB, 1),
}


def under(*limits: str) -> tuple[str, ...]:
    """The launcher's command, run by prlimit with `limits` (prlimit's own options)."""
    return ("prlimit", *limits, sys.executable, "-m", "launcher")


# name: (prlimit's options, the ranks asked for, the fragments of the one line)
REFUSED = {
    "ulimit -n 12": (("--nofile=12",), "2", ["the open-file limit (ulimit -n) is 12; accel-launch needs at least 32"]),
    "ulimit -n 36, 2 ranks": (("--nofile=36",), "2", [
        "the open-file limit (ulimit -n) is 36; accel-launch needs at least 40 open files for 2 rank(s) on this node"]),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", REFUSED)
def test_a_launch_under_a_limit_it_cannot_work_in_is_one_line_naming_the_limit(start_job, figures, tmp_path, case):
    limits, ranks, fragments = REFUSED[case]
    temp = tmp_path / "tmp"
    temp.mkdir()
    job = start_job(["--nproc-per-node", ranks, script("ok.py")], {"TMPDIR": str(temp)}, command=under(*limits))
    finished = job.finish(timeout=60)  # no hang

    assert_refused(finished, job, temp, fragments)
    assert "internal error" not in finished.stderr
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.usefixtures("launch_path")
@pytest.mark.timeout(120)
def test_a_small_address_space_limit_refuses_the_engine_path_and_lets_the_direct_path_run(start_job, figures,
                                                                                          tmp_path, launch_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    # The backend list is cached as any launch leaves it (a cold one imports torch: the next test).
    assert start_job(["--dry-run", script("ok.py")]).finish(timeout=60).returncode == 0
    job = start_job(["--nproc-per-node", "2", script("ok.py")], {"TMPDIR": str(temp)},
                    command=under(f"--as={400 * MIB}"))
    finished = job.finish(timeout=60)

    if launch_path == "engine":  # torch in the launcher: at 400 MiB it aborted with std::bad_alloc
        assert_refused(finished, job, temp, ["the address-space limit (ulimit -v) is 400 MiB; a launch on torch "
                                             "elastic's engine imports torch, which needs at least 1024 MiB"])
    else:  # the direct path never imports torch; these ranks do not either
        assert finished.returncode == 0, finished.stderr
        assert sorted(job.started_ranks()) == [0, 1]
    assert "internal error" not in finished.stderr
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(120)
def test_a_small_address_space_limit_with_no_backend_list_cached_is_one_line_not_torchs_abort(start_job, tmp_path):
    # The first launch with a torch walks dynamo's registry, which imports torch: at 400 MiB torch aborted
    # (std::bad_alloc, exit -6, no line of ours).
    temp = tmp_path / "tmp"
    temp.mkdir()
    job = start_job(["--nproc-per-node", "2", script("ok.py")],
                    {"TMPDIR": str(temp), "XDG_CACHE_HOME": str(tmp_path / "cold-cache")},
                    command=under(f"--as={400 * MIB}"))
    finished = job.finish(timeout=60)

    assert_refused(finished, job, temp, ["the address-space limit (ulimit -v) is 400 MiB; listing the compile "
                                         "backends, once for each torch install (cached after), imports torch"])


@pytest.mark.timeout(120)
def test_no_usable_folder_for_temporary_files_is_one_line_naming_the_limit(tmp_path):
    # ulimit -f 0: no file can be written in TMPDIR, /tmp, /var/tmp or the working directory. The job's stderr is a
    # pipe here: a file (as start_job makes) could not hold the line either.
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(temp), "RECORD_DIR": str(tmp_path),
           "PYTHONPATH": ":".join(sys.path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    launch = [sys.executable, "-m", "launcher", "--nproc-per-node", "2", script("ok.py")]
    # The backend list is cached as any launch leaves it (a cold cache is built in a temp folder: not the point).
    assert subprocess.run([*launch[:3], "--dry-run", *launch[3:]], env=env, cwd=tmp_path, capture_output=True,
                          timeout=60).returncode == 0
    started = time.monotonic()
    done = subprocess.run(launch, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)))

    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert error_lines(done.stderr) == [last] and "Traceback" not in done.stderr, done.stderr
    # the limit itself is checked before the banner (issue 37), so it is named, not the folders it spoils
    assert last.startswith("accel-launch: error: the file-size limit (ulimit -f) is 0 bytes")
    assert done.stderr.splitlines() == [last]
    assert list(tmp_path.glob("started-*")) == [] and launcher_leftovers(temp) == []
    assert time.monotonic() - started < 60


def small_file_size_launch(tmp_path: Path, command: list[str], case: str) -> subprocess.CompletedProcess:
    """TALKER on 2 ranks under `case`'s file-size limit; stdout and stderr are pipes, as a terminal would be (a file
    would hold only the limit's bytes)."""
    limit, log_dir, write_bytes, _ = SMALL_FILE_SIZES[case]
    (tmp_path / "talker.py").write_text(TALKER)
    logs = ["--log-dir", str(tmp_path / "logs")] if log_dir else []
    env = clean_environ({"WRITE_BYTES": str(write_bytes)} if write_bytes else {})
    return subprocess.run(["prlimit", f"--fsize={limit}", *command, "--nproc-per-node", "2", *logs, "talker.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.timeout(150)
@on_paths(("case",), {name: name for name in SMALL_FILE_SIZES}, on_engine=["4 KiB, --log-dir"])
def test_a_small_file_size_limit_runs_the_job_and_a_log_it_stops_is_said_once(tmp_path, figures, case):
    limit, log_dir, write_bytes, status = SMALL_FILE_SIZES[case]
    started = time.monotonic()
    done = small_file_size_launch(tmp_path, [sys.executable, "-m", "launcher"], case)

    assert done.returncode == status, done.stderr
    assert "needs at least" not in done.stderr and "internal error" not in done.stderr
    lines = done.stdout.splitlines()
    if status == 0:  # every line on the terminal (a failing rank's peer is stopped where it is)
        assert all(f"rank {rank} line {number:06d} " + "x" * 80 in lines for rank in (0, 1) for number in (0, 1999))
    notes = [line for line in done.stderr.splitlines() if "is incomplete: File too large" in line]
    if log_dir:  # each rank's log holds the first `limit` bytes; one line says so, per log
        assert sorted(note.split("'")[0] for note in notes) == ["accel-launch: rank 0", "accel-launch: rank 1"], notes
        logged = sorted((tmp_path / "logs").glob("*/attempt_0/*/stdout.log"))
        assert [path.stat().st_size for path in logged] == [limit, limit]
    else:
        assert notes == [], done.stderr
    if write_bytes:  # the rank's own write: EFBIG (Python ignores SIGXFSZ), its traceback, its status
        assert "OSError: [Errno 27] File too large" in done.stderr
        assert "failed first, with exit code 1" in done.stderr
    figures(status=done.returncode, seconds=time.monotonic() - started)


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.parametrize("case", SMALL_FILE_SIZES)
def test_torchrun_runs_the_same_jobs_under_the_same_limits(tmp_path, figures, case):
    started = time.monotonic()
    done = small_file_size_launch(tmp_path, [sys.executable, "-m", "torch.distributed.run"], case)

    assert done.returncode == SMALL_FILE_SIZES[case][3], done.stderr
    assert "rank 1 line 001999 " in done.stdout
    figures(status=done.returncode, seconds=time.monotonic() - started)


# name: (the command before --no-python, its status, what its stderr says of the rank's end)
SIGXFSZ_ENDS = {
    "accel-launch": ([sys.executable, "-m", "launcher"], 128 + 25, "failed first, with signal SIGXFSZ (25)"),
    "torchrun": ([sys.executable, "-m", "torch.distributed.run"], 1, "Signal 25 (SIGXFSZ) received by PID"),
}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("launcher", SIGXFSZ_ENDS)
def test_a_program_that_writes_past_the_limit_ends_with_sigxfsz_as_under_torchrun(tmp_path, figures, launcher):
    # A --no-python program gets SIGXFSZ's default action, as subprocess gives torchrun's ranks (the rank's Python
    # ignored it, and exec kept it ignored: the write failed with EFBIG and the program went on).
    command, status, words = SIGXFSZ_ENDS[launcher]
    writer = tmp_path / "writer.sh"
    writer.write_text('#!/bin/sh\nexec head -c 102400 /dev/zero > "own-$RANK.bin"\n')
    writer.chmod(0o755)
    done = subprocess.run(["prlimit", f"--fsize={64 * KIB}", *command, "--nproc-per-node", "1", "--no-python",
                           str(writer)], cwd=tmp_path, env=clean_environ(), capture_output=True, text=True, timeout=120)

    assert done.returncode == status and words in done.stderr, done.stderr
    assert (tmp_path / "own-0.bin").stat().st_size == 64 * KIB
    figures(status=done.returncode)
