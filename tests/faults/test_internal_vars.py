"""Internal variables are never trusted from outside (docs/RELIABILITY.md): what the user's environment or a parent
launch left of the launcher's own variables is removed before anything reads them or passes them to a rank, and a
file or flag that sets one is refused in one line."""

from __future__ import annotations

import pytest

from tests.launches import on_paths

from .jobs import assert_refused, script

# As a stale environment, or a parent launch (a rank that runs accel-launch again), leaves them.
LEFT_OVER = {
    "ACCEL_STORE_FD": "3",
    "ACCEL_LAUNCHER_PID": "1",
    "ACCEL_NODE_JOB": '{"settings": {"grace_period": 1}}',
    "ACCEL_COMPILE_BACKEND_SOURCE": "forged source",
}


@pytest.mark.timeout(180)
# The launcher takes them out before either path starts (tests/conftest.py, `launch_path`): the engine path, whose
# rank 0 hosts no store, takes `3`, a descriptor its ranks could find open.
@on_paths(("store_fd",), {fd: fd for fd in ("3", "999", "not-a-number")}, on_engine=["3"])
def test_internal_variables_left_in_the_environment_never_reach_a_rank(start_job, figures, store_fd):
    job = start_job(["--nproc-per-node", "2", script("gloo_internal_vars.py")],
                    {**LEFT_OVER, "ACCEL_STORE_FD": store_fd})
    finished = job.finish()

    assert finished.returncode == 0, finished.stderr
    assert "Traceback" not in finished.stderr
    assert "failed to bind" not in finished.stderr  # no rank but a direct launch's rank 0 hosts a store
    ranks = job.started_ranks()
    assert sorted(ranks) == [0, 1]
    for facts in ranks.values():
        assert facts["total"] == "2.0"
        assert facts["ACCEL_STORE_FD"] == "None"  # rank 0 of a direct launch takes its own out when it reads it
        assert facts["ACCEL_NODE_JOB"] == "None"
        assert facts["ACCEL_COMPILE_BACKEND_SOURCE"] != repr("forged source")
        launcher_pid = facts["ACCEL_LAUNCHER_PID"].strip("'")
        assert launcher_pid == str(job.pid) and facts["ppid"] == str(job.pid), (facts, job.pid)
    figures(status=finished.returncode, seconds=finished.seconds)


@pytest.mark.timeout(120)
def test_an_env_file_that_sets_an_internal_variable_is_refused_in_one_line(run_job, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    finished, job = run_job(["--env-file", "job.env", script("ok.py")], {"TMPDIR": str(temp)},
                            files={"job.env": "OK=1\nACCEL_STORE_FD=5\n"})

    assert_refused(finished, job, temp, ["env file job.env:2: 'ACCEL_STORE_FD' is the launcher's own internal "
                                         "variable, which only it sets (leave it out)"])
