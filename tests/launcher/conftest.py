"""Fixtures for launcher tests: run the real `accel-launch` in a subprocess and read what the ranks recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
RECORD_RANK = SCRIPTS / "record_rank.py"
ACCEL_LAUNCH = str(Path(sys.executable).with_name("accel-launch"))


@dataclass
class Launch:
    """A finished launch: its status, output, and the records its ranks wrote."""

    returncode: int
    stdout: str
    stderr: str
    record_dir: Path

    def records(self) -> dict[int, dict]:
        """Rank -> what that rank recorded (empty when no rank started)."""
        found = {}
        for path in self.record_dir.glob("rank-*.json"):
            found[int(path.stem.split("-")[1])] = json.loads(path.read_text())
        return found


Launcher = Callable[..., Launch]


def clean_environ(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process's environment without any ACCEL_* setting of the developer's, plus `extra`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACCEL_")}
    env.update(extra or {})
    return env


@pytest.fixture
def launch(tmp_path: Path) -> Launcher:
    """Run `python -m launcher ARGS` (or the `accel-launch` console script, which a user types) in `cwd`
    (default: a fresh temp dir) and return the Launch."""

    def run(args: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 90, console_script: bool = False) -> Launch:
        record_dir = tmp_path / "records"
        record_dir.mkdir(exist_ok=True)
        environ = clean_environ({"RECORD_DIR": str(record_dir), **(env or {})})
        work = cwd or tmp_path
        program = [ACCEL_LAUNCH] if console_script else [sys.executable, "-m", "launcher"]
        done = subprocess.run([*program, *args], cwd=work, env=environ,
                              capture_output=True, text=True, timeout=timeout)
        return Launch(done.returncode, done.stdout, done.stderr, record_dir)

    return run
