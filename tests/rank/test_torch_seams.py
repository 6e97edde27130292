"""Torch's private names a rank reaches into are one table (launcher/rank/torch_seams.py): every one is in the torch
this suite runs on, and a torch without any one of them turns its feature off with one note and no traceback, the
rank going on as under torchrun (docs/CONTRACT.md section 7)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from launcher.rank.torch_seams import COMPILE_FOLDER, COMPILE_ONCE, SEAMS, holder

SCRIPT = Path(__file__).parent / "scripts" / "seam_taken_away.py"


@pytest.mark.parametrize("name", sorted(SEAMS))
def test_every_seam_is_in_this_torch(name: str) -> None:
    seam = SEAMS[name]
    assert holder(name, importlib.import_module(seam.module)) is not None


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(SEAMS))
def test_a_torch_without_the_seam_turns_its_feature_off_with_one_note(name: str, tmp_path: Path) -> None:
    seam = SEAMS[name]
    done = subprocess.run([sys.executable, str(SCRIPT), name, str(tmp_path)], capture_output=True, text=True,
                          timeout=100)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("accel-launch: note: ")]
    assert notes == [f"accel-launch: note: torch {_torch_version()} has no {seam.module}.{seam.attribute}_renamed: "
                     f"{seam.feature} is off; the job runs as under torchrun"], done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    shared = found["backend"] == "GraphCache" and found["switch"] is True
    # compile once off: nothing shared, and torch's own remote cache (Redis) is never switched on without ours
    assert shared is (seam.feature != COMPILE_ONCE), found
    assert found["backend"] is not None or found["switch"] is not True, found
    # what torch is handed is its own RemoteCacheBackend, whose gets and puts torch's cache statistics count
    assert found["torch's own"] is True, found
    if found["backend"] is not None:
        hits = 1 if found["backend"] == "GraphCache" else 0  # NoSharing: every get a miss
        assert found["counted"][found["backend"]] == {"hit": hits, "miss": 2 - hits, "put": 1, "exception": 0}, found
    if seam.feature not in (COMPILE_ONCE, COMPILE_FOLDER):
        assert set(found["backends"].values()) == {"GraphCache", "AutogradEntries", "PgoState"}, found


def _torch_version() -> str:
    import torch

    return torch.__version__
