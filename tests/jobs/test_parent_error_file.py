"""A parent that sets TORCHELASTIC_ERROR_FILE for the launcher itself gets the failed job's root cause there, as
torchrun's `@record` main writes it: real torchrun and accel-launch run the same failing script, one after the
other, on both launch paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launches import Launcher, clean_environ

pytestmark = [pytest.mark.usefixtures("launch_path"), pytest.mark.slow, pytest.mark.timeout(180)]

TORCHRUN = Path(sys.executable).with_name("torchrun")
RECORDED = """\
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    raise ValueError("the cause, recorded")

main()
"""


def _torchrun(script: Path, error_file: Path) -> int:
    environ = clean_environ({"TORCHELASTIC_ERROR_FILE": str(error_file)})
    return subprocess.run([str(TORCHRUN), "--nproc-per-node", "1", str(script)], env=environ, cwd=script.parent,
                          capture_output=True, timeout=90).returncode


def test_a_recorded_exception_is_handed_on_with_the_rank_s_exit_code_as_torchrun_does(
    launch: Launcher, tmp_path: Path
) -> None:
    script = tmp_path / "recorded.py"
    script.write_text(RECORDED)
    theirs_file, ours_file = tmp_path / "torchrun.json", tmp_path / "ours.json"
    ours_file.write_text("left from an earlier job")
    assert _torchrun(script, theirs_file) != 0
    result = launch(["--nproc-per-node", "1", str(script)], env={"TORCHELASTIC_ERROR_FILE": str(ours_file)})
    assert result.returncode == 1, result.stderr
    theirs, ours = (json.loads(path.read_text())["message"] for path in (theirs_file, ours_file))
    assert ours["message"] == theirs["message"] == "ValueError: the cause, recorded"
    assert ours["errorCode"] == theirs["errorCode"] == 1
    assert 'raise ValueError("the cause, recorded")' in ours["extraInfo"]["py_callstack"]
    assert set(ours["extraInfo"]) == set(theirs["extraInfo"])


def test_a_rank_that_recorded_nothing_leaves_the_file_unwritten_as_with_torchrun(
    launch: Launcher, tmp_path: Path
) -> None:
    script = tmp_path / "plain.py"
    script.write_text("import sys\nsys.exit(3)\n")
    theirs_file, ours_file = tmp_path / "torchrun.json", tmp_path / "ours.json"
    assert _torchrun(script, theirs_file) != 0
    result = launch(["--nproc-per-node", "1", str(script)], env={"TORCHELASTIC_ERROR_FILE": str(ours_file)})
    assert result.returncode == 3, result.stderr
    assert not theirs_file.exists() and not ours_file.exists()
