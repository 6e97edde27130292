"""The resolved backend reaches every rank of a real launch: its ACCEL_* variables and torch's default backend.

The precedence table itself (16 combinations of the four levels, `accelerator` at each level, blank values, the
env file against the process environment, the ds_config in the script's own arguments) is shown in-process by
tests/job/test_precedence.py through `--dry-run`, whose plan lists the variables each rank is given; these
launches show that what the plan lists is what the ranks really get, through each way a value travels: a flag,
a value read from `.env` (added to the ranks' environment), and the process environment (inherited).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.launches import RECORD_RANK, Launcher

FLAG, ENV, DOTENV, DS = "eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner"


@pytest.mark.timeout(120)
def test_the_flag_wins_over_every_lower_level_in_every_rank(launch: Launcher, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"ACCEL_COMPILE_BACKEND={DOTENV}\n")
    ds_path = tmp_path / "ds.json"
    ds_path.write_text(json.dumps({"compile": {"backend": DS}}))
    result = launch(["--nproc-per-node", "2", "--compile-backend", FLAG, "--ds-config", str(ds_path), str(RECORD_RANK)],
                    env={"ACCEL_COMPILE_BACKEND": ENV})
    assert result.returncode == 0, result.stderr
    records = result.records()
    assert set(records) == {0, 1}
    for received in records.values():
        assert received["env"]["ACCEL_COMPILE_BACKEND"] == FLAG
        assert received["env"]["ACCEL_COMPILE_BACKEND_SOURCE"] == "--compile-backend"
        assert received["default_backend"] == FLAG
    assert f"compile backend {FLAG} (from --compile-backend" in result.stderr


@pytest.mark.timeout(120)
def test_a_blank_env_var_counts_as_unset_and_the_ranks_get_the_env_files_value(
    launch: Launcher, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(f"ACCEL_COMPILE_BACKEND={DOTENV}\nFROM_ENV_FILE=yes\n")
    result = launch([str(RECORD_RANK)], env={"ACCEL_COMPILE_BACKEND": "  "})
    assert result.returncode == 0, result.stderr
    received = result.records()[0]
    assert received["env"]["ACCEL_COMPILE_BACKEND"] == DOTENV
    assert received["env"]["ACCEL_COMPILE_BACKEND_SOURCE"] == f"ACCEL_COMPILE_BACKEND in {tmp_path / '.env'}"
    assert received["env"]["FROM_ENV_FILE"] == "yes"
    assert received["default_backend"] == DOTENV


@pytest.mark.timeout(120)
def test_the_process_environment_wins_over_the_env_file_in_the_ranks(launch: Launcher, tmp_path: Path) -> None:
    env_file = tmp_path / "job.env"
    env_file.write_text(f"ACCEL_COMPILE_BACKEND={DS}\nFROM_ENV_FILE=file\n")
    result = launch(["--env-file", str(env_file), str(RECORD_RANK)],
                    env={"ACCEL_COMPILE_BACKEND": ENV, "FROM_ENV_FILE": "process"})
    assert result.returncode == 0, result.stderr
    received = result.records()[0]
    assert received["env"]["ACCEL_COMPILE_BACKEND"] == ENV
    assert received["env"]["FROM_ENV_FILE"] == "process"
    assert received["default_backend"] == ENV
