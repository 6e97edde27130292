"""A limit is worded as a limit (docs/RELIABILITY.md): a real launch under `prlimit` (an open-file limit, an
address-space limit, a file-size limit that leaves no usable folder for temporary files) ends in one line naming
the limit, exit status 2, no internal error and no hang. The limits are checked before either path starts, but for
the address space, which only the engine path's torch needs: that test runs on both (tests/conftest.py)."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import pytest

from .jobs import assert_refused, error_lines, launcher_leftovers, script

MIB = 1 << 20


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
