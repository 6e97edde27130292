"""The rank's progress hook (launcher/rank/progress.py) changes nothing of what the program compiles: dynamo's
counters (graphs, graph breaks, recompiles) are the same with and without it, for a compiled model and an optimizer
step inside a compiled function; it imports nothing (torch is imported by the program); it counts every optimizer
step that ran outside a compiled region (docs/CONTRACT.md section 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.run.watch.progress_file import read_progress

SCRIPT = Path(__file__).resolve().parents[1] / "faults" / "scripts" / "watch_dynamo.py"
ROOT = Path(__file__).resolve().parents[2]


def counters(mode: str, folder: Path) -> dict:
    env = {**os.environ, "ACCEL_STACKS_DIR": str(folder), "RANK": "0", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(SCRIPT), mode], env=env, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_hook_changes_no_compile_and_counts_the_steps(tmp_path: Path):
    without = counters("off", tmp_path)
    assert read_progress(tmp_path, 0).steps == 0
    with_hook = counters("on", tmp_path)
    read = read_progress(tmp_path, 0)

    assert with_hook == without and with_hook["stats"]["unique_graphs"] >= 1
    assert (read.phase, read.steps) == ("exited", 6)  # 3 plain steps, 3 from the compiled function's graph break
