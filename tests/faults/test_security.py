"""No shell between the launcher and a rank, private temp files, and a `.env` that only sets variables."""

from __future__ import annotations

import ast
import os
import re
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from .jobs import script

SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "busybox"}


@pytest.mark.timeout(180)
def test_script_arguments_reach_the_rank_verbatim_with_no_shell_in_between(run_job, tmp_path):
    planted = tmp_path / "planted"
    hostile = [f"$(touch {planted}); ;|&", f"`touch {planted}`", "a b", "*", "'\"", "--x=$HOME"]
    finished, job = run_job([script("record.py"), *hostile])

    assert finished.returncode == 0, finished.stderr
    facts = job.started_ranks()[0]
    assert ast.literal_eval(facts["argv"]) == hostile
    assert not planted.exists()
    assert int(facts["ppid"]) == job.pid  # the rank's parent is the launcher itself
    parent_names = {entry.split(":")[1] for entry in ast.literal_eval(facts["parents"])[:2]}
    assert not parent_names & SHELLS, facts["parents"]


@pytest.mark.timeout(180)
def test_the_log_dir_is_a_fresh_private_mkdtemp_directory_removed_at_the_end(start_job, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    job = start_job([script("record.py"), "--wait-release"],
                    {"TMPDIR": str(temp), "RECORD_VARS": "TORCHELASTIC_ERROR_FILE"})
    facts = job.wait_started(1)[0]

    # (torch in the ranks makes its own torchinductor_<user> cache here too; that one is torch's, not ours)
    made = list(temp.glob("accel-launch-*"))
    assert len(made) == 1 and re.fullmatch(r"accel-launch-[a-z0-9_]{8}", made[0].name), made
    mode = made[0].stat().st_mode
    assert stat.S_IMODE(mode) == 0o700 and made[0].stat().st_uid == os.getuid()
    error_file = ast.literal_eval(facts["env_TORCHELASTIC_ERROR_FILE"])
    assert error_file.startswith(str(made[0]) + os.sep)
    (job.record_dir / "release").touch()
    assert job.finish().returncode == 0
    assert list(temp.glob("accel-launch-*")) == []


@pytest.mark.timeout(180)
def test_the_env_file_sets_variables_and_runs_nothing(run_job, tmp_path):
    planted = tmp_path / "planted"
    env_text = f"X=$(touch {planted})\nY=`touch {planted}`\nZ=${{HOME}}\n"
    finished, job = run_job([script("record.py")], {"RECORD_VARS": "X,Y,Z"}, files={".env": env_text})

    assert finished.returncode == 0, finished.stderr
    facts = job.started_ranks()[0]
    assert ast.literal_eval(facts["env_X"]) == f"$(touch {planted})"
    assert ast.literal_eval(facts["env_Y"]) == f"`touch {planted}`"
    assert ast.literal_eval(facts["env_Z"]) == "${HOME}"
    assert not planted.exists()


VALUES = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=40)
NAMES = st.from_regex(r"ACCEL_[A-Z0-9_]{1,8}", fullmatch=True)


@pytest.mark.timeout(120)
@settings(max_examples=60, deadline=None)
@given(st.dictionaries(NAMES, VALUES, max_size=4))
@example({"ACCEL_X": "$(touch planted)", "ACCEL_Y": "'; touch planted; '", "ACCEL_Z": "`touch planted`\n*"})
def test_environment_values_reach_a_remote_shell_only_quoted(environ):
    """Whatever the ACCEL_* values hold, a real sh running the remote command sees them verbatim."""
    remote_env = pytest.importorskip("launcher.head.remote_env").remote_env
    shell_command = pytest.importorskip("launcher.head.runners").SshRunner.remote
    with tempfile.TemporaryDirectory() as empty:
        sent = remote_env(environ, (), Path(empty), Path(empty))
        command = shell_command(empty, sent, ["env", "-0"])
        done = subprocess.run(["sh", "-c", command], capture_output=True, cwd=empty, env={"PATH": os.defpath},
                              timeout=30)
        assert done.returncode == 0, done.stderr
        assert os.listdir(empty) == []
    received = dict(entry.split("=", 1) for entry in done.stdout.decode("utf-8", "surrogateescape").split("\0") if entry)
    assert {name: received.get(name) for name in environ} == environ
