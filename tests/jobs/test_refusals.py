"""An unsupported backend ends the launch before any rank starts; a rank's refusal stops every rank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.launches import RECORD_RANK, SCRIPTS, Launcher


@pytest.mark.timeout(90)
@pytest.mark.parametrize("level", ["flag", "env", "dotenv", "ds"])
def test_an_unsupported_backend_from_any_level_is_refused_before_any_rank_starts(
    launch: Launcher, tmp_path: Path, level: str
) -> None:
    args: list[str] = []
    environ: dict[str, str] = {}
    ds_path = tmp_path / "ds.json"
    if level == "flag":
        args = ["--compile-backend", "indcutor"]
    elif level == "env":
        environ["ACCEL_COMPILE_BACKEND"] = "indcutor"
    elif level == "dotenv":
        (tmp_path / ".env").write_text("ACCEL_COMPILE_BACKEND=indcutor\n")
    else:
        ds_path.write_text(json.dumps({"compile": {"backend": "indcutor"}}))
        args = ["--ds-config", str(ds_path)]
    source = {"flag": "--compile-backend", "env": "ACCEL_COMPILE_BACKEND", "dotenv": "ACCEL_COMPILE_BACKEND",
              "ds": f"ds_config {ds_path}"}[level]
    result = launch([*args, "--nproc-per-node", "2", str(RECORD_RANK)], env=environ)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    message = lines[0]
    assert f"'indcutor' (from {source})" in message
    assert "not supported on cpu" in message
    assert "supported: " in message and "inductor" in message.split("supported: ")[1]
    assert "did you mean 'inductor'?" in message
    assert "Traceback" not in result.stderr
    assert result.records() == {}


@pytest.mark.timeout(90)
def test_a_cuda_only_backend_is_refused_on_cpu_naming_the_device(launch: Launcher) -> None:
    result = launch(["--compile-backend", "cudagraphs", str(RECORD_RANK)])
    assert result.returncode == 2
    assert "'cudagraphs' (from --compile-backend) is not supported on cpu" in result.stderr
    assert result.records() == {}


@pytest.mark.timeout(90)
def test_an_empty_compile_backend_flag_is_a_usage_error(launch: Launcher) -> None:
    result = launch(["--compile-backend", "", str(RECORD_RANK)])
    assert result.returncode == 2
    assert "--compile-backend" in result.stderr and "Traceback" not in result.stderr
    assert result.records() == {}


@pytest.mark.timeout(120)
def test_a_backend_refused_only_in_the_ranks_stops_every_rank_with_one_message(launch: Launcher) -> None:
    result = launch(
        ["--compile-backend", "refuse_in_ranks:backend", "--nproc-per-node", "2", str(RECORD_RANK)],
        env={"PYTHONPATH": str(SCRIPTS)},
    )
    assert result.returncode == 2, result.stderr
    summary = [line for line in result.stderr.splitlines() if line.startswith("accel-launch: rank")]
    assert len(summary) == 1, result.stderr
    assert "refused the compile backend" in summary[0]
    assert "refuse_in_ranks:backend" in summary[0]
    assert "RuntimeError" in summary[0]
    assert result.records() == {}
