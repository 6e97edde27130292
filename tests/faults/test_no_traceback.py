"""The launcher never ends in a traceback (a signal at any moment before or after the ranks included), and its
own closed or broken stdout is not a job failure."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from launcher.signal_rules import FORWARDED, STOP, signal_name
from tests.launches import on_paths

from .jobs import launcher_leftovers, script, wait_gone

# Every test here runs on both launch paths (tests/conftest.py, `launch_path`) but those that end before the
# launcher chooses one (BEFORE_ANY_PATH, and the signals while click is imported), the planted bug in the sweep both
# paths share, and signals of an outcome the engine path already takes.
pytestmark = pytest.mark.usefixtures("launch_path")

OK = script("ok.py")
LAUNCHER = "os.execv(sys.executable, [sys.executable, '-m', 'launcher', *sys.argv[1:]])"
STDOUT_CLOSED = (sys.executable, "-c", f"import os, sys; os.close(1); {LAUNCHER}")
BOTH_CLOSED = (sys.executable, "-c", f"import os, sys; os.close(1); os.close(2); {LAUNCHER}")
STDOUT_BROKEN = (sys.executable, "-c",
                 f"import os, sys; r, w = os.pipe(); os.dup2(w, 1); os.close(r); os.close(w); {LAUNCHER}")
STDOUT_FULL = (sys.executable, "-c", f"import os, sys; os.dup2(os.open('/dev/full', os.O_WRONLY), 1); {LAUNCHER}")
# A seam of one launch path is planted on both: the engine's (engine) and the direct one's (direct).
PATHS = "import launcher.run.engine.engine_run as engine, launcher.run.direct_run as direct\n"
# The end-of-job sweep is one for both paths (launcher/run/scope/job_scope.py).
SCOPE = "import launcher.run.scope.job_scope as scope\n"
# A bug of ours, planted: the end-of-job sweep raises, before the private folder is removed.
PLANTED_BUG = (sys.executable, "-c", "import sys\n" + SCOPE +
               "def broken(grace_seconds, stopping): raise RuntimeError('a planted bug')\n"
               "scope.sweep_descendants = broken\n"
               "sys.argv = ['accel-launch', *sys.argv[1:]]\n"
               "from launcher.cli.start import main\nmain()\n")
# A ValueError of ours, planted where a launch prepares its job: a bug, not the user's bad input.
PLANTED_VALUE_ERROR = (sys.executable, "-c", "import sys; import launcher.cli.command as command\n"
                       "def broken(*args, **kwargs): raise ValueError('a planted bug')\n"
                       "command.prepare_job = broken\n"
                       "sys.argv = ['accel-launch', *sys.argv[1:]]\n"
                       "from launcher.cli.start import main\nmain()\n")
# The same, planted where the report resolves its job (accel-report).
PLANTED_REPORT_BUG = (sys.executable, "-c", "import sys; import launcher.cli.report as report\n"
                      "def broken(*args, **kwargs): raise RuntimeError('a planted bug')\n"
                      "report.resolve_job = broken\n"
                      "sys.argv = ['accel-report', *sys.argv[1:]]\n"
                      "from launcher.cli.start import report_main\nreport_main()\n")
# A pause planted in the launcher: the file `paused` says the launcher is there, and it goes on once the test
# writes `release` (or after 60 s).
PAUSE = ("import os, pathlib, sys, time\n"
         "def pause():\n"
         "    pathlib.Path(os.environ['RECORD_DIR'], 'paused').touch(); deadline = time.monotonic() + 60\n"
         "    while not pathlib.Path(os.environ['RECORD_DIR'], 'release').exists() and time.monotonic() < deadline:\n"
         "        time.sleep(0.05)\n")
MAIN = "sys.argv = ['accel-launch', *sys.argv[1:]]\nfrom launcher.cli.start import main\nmain()\n"
# In the launcher's first tenth of a second: while click is being imported.
PAUSE_IN_IMPORTS = (sys.executable, "-c", PAUSE + "class Pause:\n"
                    "    def find_spec(self, name, path=None, target=None):\n"
                    "        if name == 'click':\n"
                    "            pause()\n"
                    "sys.meta_path.insert(0, Pause())\n" + MAIN)
# After the private folder is made and before any rank starts (torch elastic's handlers not installed yet).
PAUSE_BEFORE_THE_RANKS = (sys.executable, "-c", PAUSE + PATHS + "original = engine.rank_command\n"
                          "engine.rank_command = direct.rank_command = lambda program: (pause(), original(program))[1]\n"
                          + MAIN)
# After the job ended, before the end-of-job sweep.
PAUSE_AFTER_THE_JOB = (sys.executable, "-c", PAUSE + SCOPE + "original = scope.sweep_descendants\n"
                       "scope.sweep_descendants = lambda *args: (pause(), original(*args))[1]\n"
                       + MAIN)
MOMENTS = {"while-importing": PAUSE_IN_IMPORTS, "before-the-ranks": PAUSE_BEFORE_THE_RANKS,
           "after-the-job": PAUSE_AFTER_THE_JOB}
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGALRM, signal.SIGRTMIN + 3,
           signal.SIGUSR1]
# While click is imported the launcher has not yet chosen a path (nor read ACCEL_LAUNCH_PATH), and a dry run, the
# report, --help and preparing the job never reach one: those cases run once, on the launcher's own choice.
BEFORE_ANY_PATH = pytest.mark.parametrize("launch_path", ["direct"], indirect=True)
SIGNAL_CASES = {f"{moment}-{signal_name(sig)}": (moment, sig) for moment, signals in (
    ("while-importing", SIGNALS), ("before-the-ranks", SIGNALS), ("after-the-job", (signal.SIGINT, signal.SIGUSR1)))
    for sig in signals}
# One of each outcome at each moment: a stop (two before the ranks: a user's, a scheduler's) and a forwarded signal.
ENGINE_SIGNAL_CASES = ("before-the-ranks-SIGINT", "before-the-ranks-SIGTERM", "before-the-ranks-SIGUSR1",
                       "after-the-job-SIGINT", "after-the-job-SIGUSR1")


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
@BEFORE_ANY_PATH
def test_a_dry_run_into_a_broken_pipe_ends_quietly(start_job, figures):
    job = start_job(["--dry-run", OK], command=STDOUT_BROKEN)
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr and "Broken pipe" not in finished.stderr
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(60)
@BEFORE_ANY_PATH
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
@pytest.mark.parametrize("launch_path", ["direct"], indirect=True)  # planted in the end-of-job sweep both paths share
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


@pytest.mark.timeout(60)
@BEFORE_ANY_PATH
def test_a_value_error_of_ours_is_the_internal_error_line_not_a_usage_error(start_job):
    finished = start_job([OK], {}, command=PLANTED_VALUE_ERROR).finish()

    assert finished.returncode == 1, finished.stderr
    assert finished.stderr.startswith("accel-launch: internal error in accel-launch 0.1.0: ValueError: a planted bug")
    assert "accel-launch: error:" not in finished.stderr and "Traceback" not in finished.stderr


@pytest.mark.timeout(60)
@BEFORE_ANY_PATH
def test_a_bug_of_ours_in_accel_report_is_its_own_one_line(start_job):
    finished = start_job([], {}, command=PLANTED_REPORT_BUG).finish()

    assert finished.returncode == 1, finished.stderr
    assert finished.stderr.startswith("accel-report: internal error in accel-launch 0.1.0: RuntimeError: a planted bug")
    assert len(finished.stderr.splitlines()) == 1 and "Traceback" not in finished.stderr


@pytest.mark.timeout(120)
@on_paths(("moment", "sig"), SIGNAL_CASES, on_engine=ENGINE_SIGNAL_CASES)
def test_a_signal_before_or_after_the_ranks_has_its_one_outcome_and_leaves_nothing(start_job, figures, tmp_path,
                                                                                  moment, sig):
    temp = tmp_path / "tmp"
    temp.mkdir()
    job = start_job([script("ok.py")], {"TMPDIR": str(temp)}, command=MOMENTS[moment])
    deadline = time.monotonic() + 60
    while not (job.record_dir / "paused").exists():
        assert job.proc.poll() is None and time.monotonic() < deadline, job.output()[1]
        time.sleep(0.05)
    sent = job.send(sig)
    if sig not in STOP or moment == "after-the-job":
        time.sleep(0.3)  # long enough for a wrong outcome (a stop) to show
        (job.record_dir / "release").touch()
    finished = job.finish(timeout=60, since=sent)

    assert "Traceback" not in finished.stderr
    ours = [line for line in finished.stderr.splitlines()
            if line.startswith("accel-launch:") and not line.startswith("accel-launch: 1 rank(s)")]
    if sig in STOP and moment != "after-the-job":
        assert finished.returncode == 128 + sig, finished.stderr
        assert ours == [f"accel-launch: stopped by {signal_name(sig)}; no rank was left running"], finished.stderr
        assert job.started_ranks() == {}
    else:  # a stop signal after the job changes nothing; SIGUSR1 with no rank to receive it is not passed on
        assert finished.returncode == 0, finished.stderr
        note = f"accel-launch: note: {signal_name(sig)} came while no rank was running; it was not passed on"
        assert ours == ([note] if sig in FORWARDED else []), finished.stderr
        assert list(job.started_ranks()) == [0]
    assert launcher_leftovers(temp) == []
    assert wait_gone(job.marker, timeout=5) == []
    figures(status=finished.returncode, seconds=finished.seconds)
