"""The torch range setup.py declares holds the torch this suite runs on, its floor is a release the README names as
tested (a floor below it would promise what no test shows: torch 2.4 lacks the agent fields the engine path
passes), and the README names the running release among those tested."""

from __future__ import annotations

import re
from importlib.metadata import requires, version
from pathlib import Path

import torch.distributed.elastic.agent.server.api as agent_api

SETUP = Path(__file__).resolve().parents[1] / "setup.py"
README = Path(__file__).resolve().parents[1] / "README.md"


def _floor() -> tuple[int, int]:
    found = re.search(r'"torch>=(\d+)\.(\d+),<\d+"', SETUP.read_text(encoding="utf-8"))
    assert found is not None, "setup.py names no torch range"
    return int(found.group(1)), int(found.group(2))


def _running() -> tuple[int, int]:
    major, minor = version("torch").split("+")[0].split(".")[:2]
    return int(major), int(minor)


def _tested() -> list[tuple[int, int]]:
    found = re.search(r"tested on torch ((?:\d+\.\d+(?:, | and )?)+)", README.read_text(encoding="utf-8"))
    assert found is not None, "the README names no tested torch releases"
    return [(int(major), int(minor)) for major, minor in re.findall(r"(\d+)\.(\d+)", found.group(1))]


def test_the_torch_this_suite_runs_on_is_within_the_declared_range() -> None:
    assert _floor() <= _running() < (3, 0)


def test_the_declared_floor_and_the_running_torch_are_releases_the_readme_names_as_tested() -> None:
    assert _floor() == min(_tested())
    assert _running() in _tested()


def test_the_installed_package_declares_the_same_floor() -> None:
    declared = [line for line in requires("accel-launch") or [] if line.startswith("torch")]
    assert declared == [f"torch<3,>={_floor()[0]}.{_floor()[1]}"] or declared == [f"torch>={_floor()[0]}.{_floor()[1]},<3"]


def test_the_fields_the_engine_path_passes_exist_in_this_torch() -> None:
    spec_fields = set(agent_api.WorkerSpec.__dataclass_fields__)
    assert {"virtual_local_rank", "duplicate_stdout_filters", "duplicate_stderr_filters", "event_log_handler",
            "local_addr"} <= spec_fields
