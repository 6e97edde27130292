"""The torch floor setup.py declares is the release the suite runs on: a floor below it would promise what no test
shows (torch 2.4 lacks the agent fields the engine path passes)."""

from __future__ import annotations

import re
from importlib.metadata import requires, version
from pathlib import Path

import torch.distributed.elastic.agent.server.api as agent_api

SETUP = Path(__file__).resolve().parents[1] / "setup.py"


def _floor() -> tuple[int, int]:
    found = re.search(r'"torch>=(\d+)\.(\d+),<\d+"', SETUP.read_text(encoding="utf-8"))
    assert found is not None, "setup.py names no torch range"
    return int(found.group(1)), int(found.group(2))


def test_the_declared_floor_is_the_torch_this_suite_runs_on() -> None:
    running = tuple(int(part) for part in version("torch").split("+")[0].split(".")[:2])
    assert _floor() == running


def test_the_installed_package_declares_the_same_floor() -> None:
    declared = [line for line in requires("accel-launch") or [] if line.startswith("torch")]
    assert declared == [f"torch<3,>={_floor()[0]}.{_floor()[1]}"] or declared == [f"torch>={_floor()[0]}.{_floor()[1]},<3"]


def test_the_fields_the_engine_path_passes_exist_in_this_torch() -> None:
    spec_fields = set(agent_api.WorkerSpec.__dataclass_fields__)
    assert {"virtual_local_rank", "duplicate_stdout_filters", "duplicate_stderr_filters", "event_log_handler",
            "local_addr"} <= spec_fields
