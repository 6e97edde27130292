"""The head's room for its runner processes: one open pipe each, within the open-files limit."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launches import clean_environ

COUNT_ROOM = """
import resource, sys
from launcher.errors import OpenFilesError
from launcher.head.runners import LaunchCommand
from launcher.head.supervise import make_room_for
try:
    make_room_for([LaunchCommand(("ssh", f"h{index}")) for index in range(int(sys.argv[1]))])
except OpenFilesError as exc:
    print(exc)
else:
    print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def limited(soft: int, hard: int):
    """A preexec_fn that starts the child with these open-file limits."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize(("commands", "soft", "hard", "expected"), [
    (500, 100, 4096, "564"),          # raised to what 500 pipes and the launcher's own need
    (10, 100, 4096, "100"),           # already room: left as it is
    (500, 100, 200, "starting 500 runner processes needs 564 open files, and this shell allows at most 200"),
])
def test_the_soft_limit_is_raised_for_every_runner_or_the_launch_is_refused_at_the_hard_limit(
    commands: int, soft: int, hard: int, expected: str
) -> None:
    done = subprocess.run([sys.executable, "-c", COUNT_ROOM, str(commands)], capture_output=True, text=True,
                          timeout=60, preexec_fn=limited(soft, hard))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(expected), done.stdout


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_hostfile_launch_past_the_hard_limit_is_one_line_and_starts_no_runner(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text("".join(f"h{index} slots=1\n" for index in range(200)))
    (tmp_path / "ok.py").write_text("open('started', 'w')\n")
    done = subprocess.run([sys.executable, "-m", "launcher", "--hostfile", "hosts", "ok.py"], cwd=tmp_path,
                          env=clean_environ(), capture_output=True, text=True, timeout=60,
                          preexec_fn=limited(100, 100))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "accel-launch: error: starting 200 runner processes needs 264 open files, and this shell allows at most 100 "
        "(ulimit -Hn); raise the limit, or use --launcher pdsh, openmpi or slurm, which start the nodes from one "
        "process"]
    assert not (tmp_path / "started").exists()
