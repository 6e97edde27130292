"""The shell's own hooks work (issue 37): click's completion writes bytes to stdout's binary stream, which the
launcher's forgiving stdout (launcher/cli/std_streams.py) has as well, a reader gone away included."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.launches import ACCEL_LAUNCH


def completion(variables: dict[str, str], stdout: int = subprocess.PIPE) -> subprocess.CompletedProcess:
    env = {**os.environ, **variables}
    return subprocess.run([ACCEL_LAUNCH], env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_completion_script_of_each_shell_is_printed(shell):
    done = completion({"_ACCEL_LAUNCH_COMPLETE": f"{shell}_source"})

    assert done.returncode == 0, done.stderr
    assert "_ACCEL_LAUNCH_COMPLETE" in done.stdout and done.stderr == ""


@pytest.mark.timeout(90)
def test_completing_a_flag_offers_its_spellings():
    done = completion({"_ACCEL_LAUNCH_COMPLETE": "bash_complete", "COMP_WORDS": "accel-launch --nproc",
                       "COMP_CWORD": "1"})

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["plain,--nproc-per-node", "plain,--nproc_per_node"]


@pytest.mark.timeout(90)
def test_a_completion_script_whose_reader_went_away_ends_quietly():
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = completion({"_ACCEL_LAUNCH_COMPLETE": "bash_source"}, stdout=write_end)
    finally:
        os.close(write_end)

    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
