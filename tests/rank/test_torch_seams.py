"""Torch's private names a rank reaches into are one table (launcher/rank/torch_seams.py): every one is in the torch
this suite runs on, and a torch without any one of them turns its feature off with one note and no traceback, the
rank going on as under torchrun (docs/CONTRACT.md section 7)."""

from __future__ import annotations

import ast
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


RANK = Path(__file__).resolve().parents[2] / "launcher" / "rank"
# Private names of other programs than torch that the rank side reaches, each for its own reason.
NOT_TORCHS = {("sys", "_getframe"),  # the frame a compile starts in (compile_state.py)
              ("deepspeed_accelerator", "_compile_backend")}  # DeepSpeed's own, set as its setter would


def test_the_rank_reaches_no_private_torch_name_outside_the_table() -> None:
    """Outside torch_seams.py a private name of torch is reached only through `holder`: a private attribute is read
    only of a module the table names (as `torch._dynamo.x`), and every torch module a hook waits for is one of them
    or public."""
    modules = {seam.module for seam in SEAMS.values()}
    found = []
    for path in sorted(RANK.rglob("*.py")):
        if path.name == "torch_seams.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = ast.unparse(node.value)
                if owner not in ("self", "cls", "super()") and (owner, node.attr) not in NOT_TORCHS \
                        and f"{owner}.{node.attr}" not in modules:
                    found.append(f"{path.name}:{node.lineno} {owner}.{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("torch.") \
                    and "._" in node.value and node.value not in modules and " " not in node.value:
                found.append(f"{path.name}:{node.lineno} {node.value}")
    assert found == []


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
    # the resolved backend is torch's default unless the setter is gone (torch's own, inductor, then stands)
    assert found["default"] == ("inductor" if name == "default_backend_set" else "eager"), found
    if seam.feature not in (COMPILE_ONCE, COMPILE_FOLDER):
        assert set(found["backends"].values()) == {"GraphCache", "AutogradEntries", "PgoState"}, found


def _torch_version() -> str:
    import torch

    return torch.__version__
