"""The four levels of docs/CONTRACT.md section 2, as the plan of `accel-launch --dry-run` shows them: the backend, its
source, and the ACCEL_* variables every rank is given. (tests/jobs/test_precedence.py shows real ranks receive
them; tests/job/test_backend_properties.py checks the resolver alone on any mix of levels.)"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tests.launches import RECORD_RANK, CliRunnerFn

# One distinct, valid backend per input, so the winner is visible in the plan.
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
        candidates.append((DOTENV, f"ACCEL_COMPILE_BACKEND in {tmp_path / '.env'}"))
    if ds:
        ds_path = tmp_path / "ds.json"
        ds_path.write_text(json.dumps({"compile": {"backend": DS}}))
        args += ["--ds-config", str(ds_path)]
        candidates.append((DS, f"ds_config {ds_path}"))
    candidates.append((DEFAULT, "accelerator default"))
    return args, environ, *candidates[0]


@pytest.mark.parametrize("flag,env,dotenv,ds", list(itertools.product([False, True], repeat=4)))
def test_the_first_level_that_gives_a_value_wins_and_is_what_every_rank_is_given(
    cli: CliRunnerFn, tmp_path: Path, flag: bool, env: bool, dotenv: bool, ds: bool
) -> None:
    args, environ, expected, source = _setup(tmp_path, flag, env, dotenv, ds)
    result = cli(["--dry-run", "--nproc-per-node", "2", *args, str(RECORD_RANK)], env=environ)
    assert result.status == 0, result.stderr
    assert result.row("compile backend") == f"{expected} (from {source})"
    given = result.environment()
    assert (given["ACCEL_COMPILE_BACKEND"], given["ACCEL_COMPILE_BACKEND_SOURCE"]) == (expected, source)


@pytest.mark.parametrize("level", ["flag", "env", "dotenv", "ds"])
def test_accelerator_at_any_level_selects_the_default_and_stops_the_search(
    cli: CliRunnerFn, tmp_path: Path, level: str
) -> None:
    ds_path = tmp_path / "ds.json"
    ds_path.write_text(json.dumps({"compile": {"backend": "accelerator" if level == "ds" else DS}}))
    args = ["--ds-config", str(ds_path)]
    environ = {}
    if level == "flag":
        args += ["--compile-backend", "accelerator"]
        environ["ACCEL_COMPILE_BACKEND"] = ENV
    elif level == "env":
        environ["ACCEL_COMPILE_BACKEND"] = "accelerator"
    elif level == "dotenv":
        (tmp_path / ".env").write_text("ACCEL_COMPILE_BACKEND=accelerator\n")
    result = cli(["--dry-run", *args, str(RECORD_RANK)], env=environ)
    assert result.status == 0, result.stderr
    source = {"flag": "--compile-backend", "env": "ACCEL_COMPILE_BACKEND",
              "dotenv": f"ACCEL_COMPILE_BACKEND in {tmp_path / '.env'}", "ds": f"ds_config {ds_path}"}[level]
    assert result.row("compile backend") == f"{DEFAULT} (from {source}, via 'accelerator')"
    given = result.environment()
    assert (given["ACCEL_COMPILE_BACKEND"], given["ACCEL_COMPILE_BACKEND_SOURCE"]) == (DEFAULT, source)


@pytest.mark.parametrize("process_value", ["", "   ", "\t"])
def test_a_blank_env_var_counts_as_unset_and_the_env_file_gives_the_value(
    cli: CliRunnerFn, tmp_path: Path, process_value: str
) -> None:
    (tmp_path / ".env").write_text(f"ACCEL_COMPILE_BACKEND={ENV}\nFROM_ENV_FILE=yes\n")
    result = cli(["--dry-run", str(RECORD_RANK)], env={"ACCEL_COMPILE_BACKEND": process_value})
    assert result.status == 0, result.stderr
    assert result.row("compile backend") == f"{ENV} (from ACCEL_COMPILE_BACKEND in {tmp_path / '.env'})"
    assert result.row(".env file") == str(tmp_path / ".env")
    given = result.environment()
    assert given["ACCEL_COMPILE_BACKEND"] == ENV
    assert given["FROM_ENV_FILE"] == "yes"


def test_a_blank_env_var_without_an_env_file_falls_through_to_the_ds_config(cli: CliRunnerFn, tmp_path: Path) -> None:
    ds_path = tmp_path / "ds.json"
    ds_path.write_text(json.dumps({"compile": {"backend": DS}}))
    result = cli(["--dry-run", "--ds-config", str(ds_path), str(RECORD_RANK)], env={"ACCEL_COMPILE_BACKEND": " "})
    assert result.status == 0, result.stderr
    assert result.row(".env file") == "(none)"
    assert result.row("compile backend") == f"{DS} (from ds_config {ds_path})"


def test_the_process_environment_wins_over_a_named_env_file(cli: CliRunnerFn, tmp_path: Path) -> None:
    env_file = tmp_path / "job.env"
    env_file.write_text(f"ACCEL_COMPILE_BACKEND={DS}\nFROM_ENV_FILE=file\nONLY_IN_FILE=1\n")
    result = cli(["--dry-run", "--env-file", str(env_file), str(RECORD_RANK)],
                 env={"ACCEL_COMPILE_BACKEND": ENV, "FROM_ENV_FILE": "process"})
    assert result.status == 0, result.stderr
    assert result.row("compile backend") == f"{ENV} (from ACCEL_COMPILE_BACKEND)"
    given = result.environment()
    assert "FROM_ENV_FILE" not in given  # the ranks inherit the process's value; the file's is not added
    assert given["ONLY_IN_FILE"] == "1"


def test_a_named_env_file_replaces_the_default_dot_env(cli: CliRunnerFn, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"ACCEL_COMPILE_BACKEND={DOTENV}\nFROM_DOT_ENV=1\n")
    (tmp_path / "job.env").write_text(f"ACCEL_COMPILE_BACKEND={ENV}\n")
    result = cli(["--dry-run", "--env-file", "job.env", str(RECORD_RANK)])
    assert result.status == 0, result.stderr
    assert result.row("compile backend") == f"{ENV} (from ACCEL_COMPILE_BACKEND in job.env)"
    assert result.row(".env file") == "job.env"
    assert "FROM_DOT_ENV" not in result.environment()


@pytest.mark.parametrize("form", ["--deepspeed_config PATH", "--deepspeed_config=PATH", "--deepspeed PATH"])
def test_the_ds_config_is_found_in_the_scripts_own_arguments_which_pass_untouched(
    cli: CliRunnerFn, tmp_path: Path, form: str
) -> None:
    ds_path = tmp_path / "ds.json"
    ds_path.write_text(json.dumps({"compile": {"backend": DS}}))
    script_args = form.replace("PATH", str(ds_path)).split(" ")
    result = cli(["--dry-run", str(RECORD_RANK), *script_args])
    assert result.status == 0, result.stderr
    assert result.row("compile backend") == f"{DS} (from ds_config {ds_path})"
    assert result.environment()["ACCEL_COMPILE_BACKEND_SOURCE"] == f"ds_config {ds_path}"
    assert result.row("node 0 command").endswith(f"script {RECORD_RANK} {' '.join(script_args)}")


def test_the_ds_config_flag_wins_over_the_scripts_own_argument(cli: CliRunnerFn, tmp_path: Path) -> None:
    (tmp_path / "flag.json").write_text(json.dumps({"compile": {"backend": DS}}))
    (tmp_path / "arg.json").write_text(json.dumps({"compile": {"backend": FLAG}}))
    result = cli(["--dry-run", "--ds-config", "flag.json", str(RECORD_RANK), "--deepspeed_config", "arg.json"])
    assert result.status == 0, result.stderr
    assert result.row("compile backend") == f"{DS} (from ds_config flag.json)"
