"""The launcher never ends in a traceback, and its own closed or broken stdout is not a job failure."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from .jobs import SIGNAL_STATUS, launcher_leftovers, script, wait_gone

OK = script("ok.py")
LAUNCHER = "os.execv(sys.executable, [sys.executable, '-m', 'launcher', *sys.argv[1:]])"
STDOUT_CLOSED = (sys.executable, "-c", f"import os, sys; os.close(1); {LAUNCHER}")
BOTH_CLOSED = (sys.executable, "-c", f"import os, sys; os.close(1); os.close(2); {LAUNCHER}")
STDOUT_BROKEN = (sys.executable, "-c",
                 f"import os, sys; r, w = os.pipe(); os.dup2(w, 1); os.close(r); os.close(w); {LAUNCHER}")
STDOUT_FULL = (sys.executable, "-c", f"import os, sys; os.dup2(os.open('/dev/full', os.O_WRONLY), 1); {LAUNCHER}")
# A bug of ours, planted: the end-of-job sweep raises, before the private folder is removed.
PLANTED_BUG = (sys.executable, "-c", "import sys; import launcher.run.spawn as spawn\n"
               "def broken(grace_seconds): raise RuntimeError('a planted bug')\n"
               "spawn.sweep_descendants = broken\n"
               "sys.argv = ['accel-launch', *sys.argv[1:]]\n"
               "from launcher.cli.start import main\nmain()\n")
# A pause planted after the private folder is made and before any rank starts (torch elastic's own signal
# handlers are not installed yet); the file `paused` says the launcher is there.
PLANTED_PAUSE = (sys.executable, "-c", "import os, pathlib, sys, time; import launcher.run.spawn as spawn\n"
                 "original = spawn.rank_command\n"
                 "def paused(config):\n"
                 "    pathlib.Path(os.environ['RECORD_DIR'], 'paused').touch(); time.sleep(60)\n"
                 "    return original(config)\n"
                 "spawn.rank_command = paused\n"
                 "sys.argv = ['accel-launch', *sys.argv[1:]]\n"
                 "from launcher.cli.start import main\nmain()\n")
# A pause planted in the launcher's first tenth of a second: while click is being imported.
PAUSE_IN_IMPORTS = (sys.executable, "-c", "import os, pathlib, sys, time\n"
                    "class Pause:\n"
                    "    def find_spec(self, name, path=None, target=None):\n"
                    "        if name == 'click':\n"
                    "            pathlib.Path(os.environ['RECORD_DIR'], 'paused').touch(); time.sleep(60)\n"
                    "sys.meta_path.insert(0, Pause())\n"
                    "sys.argv = ['accel-launch', *sys.argv[1:]]\n"
                    "from launcher.cli.start import main\nmain()\n")


@pytest.mark.timeout(180)
def test_a_closed_stdout_is_not_a_job_failure(start_job, figures):
    job = start_job([OK], command=STDOUT_CLOSED)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr
    assert list(job.started_ranks()) == [0]
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(180)
def test_closed_stdout_and_stderr_keep_the_failed_ranks_status(start_job, figures):
    job = start_job(["--nproc-per-node", "2", script("fail.py")], {"FAIL_RANK": "1", "FAIL_CODE": "3"},
                    command=BOTH_CLOSED)
    finished = job.finish()

    assert finished.returncode == 3
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(60)
def test_a_dry_run_into_a_broken_pipe_ends_quietly(start_job, figures):
    job = start_job(["--dry-run", OK], command=STDOUT_BROKEN)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr and "Broken pipe" not in finished.stderr
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("args", "line"), [
    (["--dry-run", OK], "accel-launch: error: cannot write to stdout: No space left on device"),
    (["report"], "accel-report: error: cannot write to stdout: No space left on device"),
    (["report", "--compile-backend", "inductr"],
     "accel-report: error: cannot write to stdout: No space left on device"),
    (["--help"], "accel-launch: error: cannot write to stdout: No space left on device"),
])
def test_a_plan_report_or_help_lost_on_a_full_stdout_is_one_line_and_exit_1(start_job, figures, args, line):
    job = start_job(args, command=STDOUT_FULL)
    finished = job.finish()

    assert (finished.returncode, finished.stderr) == (1, line + "\n")
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(180)
def test_a_bug_of_ours_is_one_line_asking_for_a_report_and_the_private_folder_is_removed(start_job, figures, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    job = start_job([OK], {"TMPDIR": str(temp)}, command=PLANTED_BUG)
    finished = job.finish()

    assert finished.returncode == 1, finished.stderr
    assert "Traceback" not in finished.stderr
    lines = [line for line in finished.stderr.splitlines() if "internal error" in line]
    assert len(lines) == 1, finished.stderr
    assert lines[0].startswith("accel-launch: internal error in accel-launch 0.1.0: RuntimeError: a planted bug")
    assert "please report this bug" in lines[0]
    assert launcher_leftovers(temp) == []
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize(("command", "folders"), [(PAUSE_IN_IMPORTS, 0), (PLANTED_PAUSE, 1)],
                         ids=["while-importing", "before-the-ranks"])
def test_a_signal_before_any_rank_starts_ends_with_128_plus_n_one_line_and_nothing_left(start_job, figures,
                                                                                      tmp_path, sig, command,
                                                                                      folders):
    temp = tmp_path / "tmp"
    temp.mkdir()
    job = start_job([OK], {"TMPDIR": str(temp)}, command=command)
    deadline = time.monotonic() + 120
    while not (job.record_dir / "paused").exists():
        assert job.proc.poll() is None and time.monotonic() < deadline, job.output()[1]
        time.sleep(0.05)
    assert len(launcher_leftovers(temp)) == folders  # the private folder exists once the job is prepared
    finished = job.finish(since=job.send(sig))

    assert finished.returncode == SIGNAL_STATUS[sig], finished.stderr
    assert f"accel-launch: stopped by {sig.name}; no rank was left running" in finished.stderr
    assert "Traceback" not in finished.stderr and "Aborted!" not in finished.stderr
    assert job.started_ranks() == {}
    assert launcher_leftovers(temp) == []
    figures(status=finished.returncode, seconds=finished.seconds)
