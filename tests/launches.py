"""Real `accel-launch` runs for the tests: the Launch they return, the clean environment they start from, and
the scripts their ranks run. The `launch` fixture (tests/conftest.py) makes them."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

SCRIPTS = Path(__file__).resolve().parent / "scripts"
RECORD_RANK = SCRIPTS / "record_rank.py"
ACCEL_LAUNCH = str(Path(sys.executable).with_name("accel-launch"))
# Set by the `launch_path` fixture (tests/conftest.py) for the running test: nothing (the launcher's own choice,
# the direct path where it can) or ACCEL_LAUNCH_PATH=engine (docs/FLAGS.md); every launch of the test gets it.
LAUNCH_PATH: dict[str, str] = {}


Test = TypeVar("Test", bound=Callable[..., object])


def on_paths(argnames: tuple[str, ...], cases: Mapping[str, object],
             on_engine: Collection[str]) -> Callable[[Test], Test]:
    """Parametrize a test over `cases` (name: the value of its one argname, or a tuple of them all): every case on
    the direct path, and those named in `on_engine` on the engine path too (tests/conftest.py, `launch_path`)."""
    params = [pytest.param(path, *(value if len(argnames) > 1 else (value,)), id=f"{path}-{name}")
              for path in ("direct", "engine") for name, value in cases.items()
              if path == "direct" or name in on_engine]

    def mark(test: Test) -> Test:
        parametrized = pytest.mark.parametrize(("launch_path", *argnames), params, indirect=["launch_path"])(test)
        return pytest.mark.usefixtures("launch_path")(parametrized)

    return mark


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
    """The test process's environment without any ACCEL_* setting of the developer's, plus the test's launch
    path, plus `extra`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ACCEL_")}
    env.update(LAUNCH_PATH)
    env.update(extra or {})
    return env


@dataclass
class CliRun:
    """An in-process `accel-launch` run (click's CliRunner): its status, output, and the plan's rows."""

    status: int
    stdout: str
    stderr: str

    def plan(self) -> list[tuple[str, str]]:
        """The `--dry-run` table as (label, value) rows, in order (labels such as `environment` repeat)."""
        rows = []
        for line in self.stdout.splitlines()[1:]:
            label, sep, value = line.strip().partition(" : ")
            if sep:
                rows.append((label.strip(), value))
        return rows

    def row(self, label: str) -> str:
        """The value of the one row with this label."""
        values = [value for found, value in self.plan() if found == label]
        assert len(values) == 1, (label, self.stdout)
        return values[0]

    def environment(self) -> dict[str, str]:
        """The plan's `environment` rows: what the launcher adds to every rank's environment."""
        return dict(value.split("=", 1) for label, value in self.plan() if label == "environment")


CliRunnerFn = Callable[..., CliRun]
