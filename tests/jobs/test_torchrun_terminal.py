"""What a program sees and the terminal shows, beside real torchrun (issue 38): `sys.argv[0]` as typed, stdout
bytes with and without --log-dir, and torchrun's log layout under --log-dir. What the terminal shows and the log
folder hold run on both paths; `sys.argv[0]`, the rank's own, once (tests/conftest.py, `launch_path`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.launches import SCRIPTS, Launcher, clean_environ

pytestmark = pytest.mark.timeout(180)

TORCHRUN = str(Path(sys.executable).with_name("torchrun"))
DUMP = SCRIPTS / "dump_env.py"


def _torchrun(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    records = cwd / "torchrun-records"
    records.mkdir(exist_ok=True)
    done = subprocess.run([TORCHRUN, *args], cwd=cwd, env=clean_environ({"RECORD_DIR": str(records)}),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_a_script_given_by_a_relative_path_sees_argv_and_file_as_python_and_torchrun_give_them(
        launch: Launcher, tmp_path: Path) -> None:
    (tmp_path / "progs").mkdir()
    shutil.copy(SCRIPTS / "record_rank.py", tmp_path / "progs" / "train.py")
    ours = launch(["--compile-backend", "eager", "progs/train.py", "x"], cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    _torchrun(["--nproc-per-node", "1", "progs/train.py", "x"], tmp_path)
    theirs = json.loads((tmp_path / "torchrun-records" / "rank-0.json").read_text())
    record = ours.records()[0]
    assert record["argv"] == theirs["argv"] == ["progs/train.py", "x"]
    assert record["file"] == theirs["file"] == str(tmp_path / "progs" / "train.py")


@pytest.mark.usefixtures("launch_path")
def test_keeping_logs_changes_nothing_on_the_terminal_and_it_shows_what_torchrun_shows(
        launch: Launcher, tmp_path: Path) -> None:
    args = ["--nproc-per-node", "2", str(DUMP), "--say", "iter 15:"]
    bare = launch(args)
    kept = launch(["--log-dir", str(tmp_path / "logs"), *args])
    theirs = _torchrun(args, tmp_path)
    assert bare.returncode == kept.returncode == 0, bare.stderr + kept.stderr
    assert sorted(kept.stdout.splitlines()) == sorted(bare.stdout.splitlines()) == \
        sorted(theirs.stdout.splitlines()) == ["iter 15: out 0", "iter 15: out 1"]


@pytest.mark.usefixtures("launch_path")
def test_the_log_dir_holds_torchruns_layout(launch: Launcher, tmp_path: Path) -> None:
    ours = launch(["--nproc-per-node", "2", "--log-dir", str(tmp_path / "ours"), str(DUMP), "--say", "l"])
    assert ours.returncode == 0, ours.stderr
    _torchrun(["--nproc-per-node", "2", "--log-dir", str(tmp_path / "theirs"), "--tee", "3", str(DUMP), "--say",
               "l"], tmp_path)
    pattern = "*/attempt_0/*/stdout.log"
    found = {side: sorted(path.read_text() for path in (tmp_path / side).glob(pattern)) for side in ("ours", "theirs")}
    assert found["ours"] == found["theirs"] == ["l out 0\n", "l out 1\n"]
    run_folder, = (tmp_path / "ours").iterdir()
    assert run_folder.stat().st_mode & 0o777 == 0o700  # torch's own mkdtemp: private to the user
