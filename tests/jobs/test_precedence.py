"""The four levels of CONTRACT.md section 2, shown by what the ranks really received."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tests.launches import RECORD_RANK, Launcher

# One distinct, valid backend per input, so the winner is visible in what the rank received.
FLAG, ENV, DOTENV, DS = "eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner"
DEFAULT = "inductor"


def _setup(tmp_path: Path, flag: bool, env: bool, dotenv: bool, ds: bool) -> tuple[list[str], dict[str, str], str, str]:
    """The launch arguments and environment for one combination, and the backend and source that must win."""
    args: list[str] = []
    environ: dict[str, str] = {}
    candidates = []
    if flag:
        args += ["--compile-backend", FLAG]
        candidates.append((FLAG, "--compile-backend"))
    if env:
        environ["ACCEL_COMPILE_BACKEND"] = ENV
        candidates.append((ENV, "ACCEL_COMPILE_BACKEND"))
    if dotenv:
        (tmp_path / ".env").write_text(f"ACCEL_COMPILE_BACKEND={DOTENV}\n")
        candidates.append((DOTENV, "ACCEL_COMPILE_BACKEND"))
    if ds:
        ds_path = tmp_path / "ds.json"
        ds_path.write_text(json.dumps({"compile": {"backend": DS}}))
        args += ["--ds-config", str(ds_path)]
        candidates.append((DS, f"ds_config {ds_path}"))
    candidates.append((DEFAULT, "accelerator default"))
    return args, environ, *candidates[0]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("flag,env,dotenv,ds", list(itertools.product([False, True], repeat=4)))
def test_the_first_level_that_gives_a_value_wins_in_every_rank(
    launch: Launcher, tmp_path: Path, flag: bool, env: bool, dotenv: bool, ds: bool
) -> None:
    args, environ, expected, source = _setup(tmp_path, flag, env, dotenv, ds)
    result = launch([*args, str(RECORD_RANK)], env=environ)
    assert result.returncode == 0, result.stderr
    records = result.records()
    assert set(records) == {0}
    received = records[0]
    assert received["env"]["ACCEL_COMPILE_BACKEND"] == expected
    assert received["env"]["ACCEL_COMPILE_BACKEND_SOURCE"] == source
    assert received["default_backend"] == expected
    assert f"compile backend {expected} (from {source}" in result.stderr


@pytest.mark.timeout(120)
@pytest.mark.parametrize("level", ["flag", "env", "ds"])
def test_accelerator_at_any_level_selects_the_default_and_stops_the_search(
    launch: Launcher, tmp_path: Path, level: str
) -> None:
    ds_path = tmp_path / "ds.json"
    ds_path.write_text(json.dumps({"compile": {"backend": "accelerator" if level == "ds" else DS}}))
    args = ["--ds-config", str(ds_path)]
    environ = {}
    if level in ("flag",):
        args += ["--compile-backend", "accelerator"]
    if level in ("flag", "env"):
        environ["ACCEL_COMPILE_BACKEND"] = "accelerator" if level == "env" else ENV
    result = launch([*args, str(RECORD_RANK)], env=environ)
    assert result.returncode == 0, result.stderr
    received = result.records()[0]
    source = {"flag": "--compile-backend", "env": "ACCEL_COMPILE_BACKEND", "ds": f"ds_config {ds_path}"}[level]
    assert received["env"]["ACCEL_COMPILE_BACKEND"] == DEFAULT
    assert received["env"]["ACCEL_COMPILE_BACKEND_SOURCE"] == source
    assert received["default_backend"] == DEFAULT


@pytest.mark.timeout(120)
@pytest.mark.parametrize("process_value", ["", "   "])
def test_a_blank_env_var_counts_as_unset_and_the_env_file_gives_the_value(
    launch: Launcher, tmp_path: Path, process_value: str
) -> None:
    (tmp_path / ".env").write_text(f"ACCEL_COMPILE_BACKEND={ENV}\nFROM_ENV_FILE=yes\n")
    result = launch([str(RECORD_RANK)], env={"ACCEL_COMPILE_BACKEND": process_value})
    assert result.returncode == 0, result.stderr
    received = result.records()[0]
    assert received["env"]["ACCEL_COMPILE_BACKEND"] == ENV
    assert received["env"]["ACCEL_COMPILE_BACKEND_SOURCE"] == "ACCEL_COMPILE_BACKEND"
    assert received["env"]["FROM_ENV_FILE"] == "yes"


@pytest.mark.timeout(120)
def test_the_process_environment_wins_over_the_env_file(launch: Launcher, tmp_path: Path) -> None:
    env_file = tmp_path / "job.env"
    env_file.write_text(f"ACCEL_COMPILE_BACKEND={DS}\nFROM_ENV_FILE=file\n")
    result = launch(["--env-file", str(env_file), str(RECORD_RANK)],
                    env={"ACCEL_COMPILE_BACKEND": ENV, "FROM_ENV_FILE": "process"})
    assert result.returncode == 0, result.stderr
    received = result.records()[0]
    assert received["env"]["ACCEL_COMPILE_BACKEND"] == ENV
    assert received["env"]["FROM_ENV_FILE"] == "process"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("form", ["--deepspeed_config PATH", "--deepspeed_config=PATH", "--deepspeed PATH"])
def test_the_ds_config_is_found_in_the_scripts_own_arguments(launch: Launcher, tmp_path: Path, form: str) -> None:
    ds_path = tmp_path / "ds.json"
    ds_path.write_text(json.dumps({"compile": {"backend": DS}}))
    script_args = form.replace("PATH", str(ds_path)).split(" ")
    result = launch([str(RECORD_RANK), *script_args])
    assert result.returncode == 0, result.stderr
    received = result.records()[0]
    assert received["env"]["ACCEL_COMPILE_BACKEND"] == DS
    assert received["env"]["ACCEL_COMPILE_BACKEND_SOURCE"] == f"ds_config {ds_path}"
    assert received["argv"][1:] == script_args
