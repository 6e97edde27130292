"""NCCL's flight recorder for cuda jobs: torch's variables set where unset, shown in --dry-run, the user's values
winning (under either name torch reads); nothing on cpu. The cuda device is faked at its availability seam."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from accelerators.cuda import CUDAAccelerator

CUDA = {"ACCEL_ACCELERATOR": "cuda", "ACCEL_COMPILE_BACKEND": "eager"}


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CUDAAccelerator, "is_available", classmethod(lambda cls: True))
    monkeypatch.setattr(CUDAAccelerator, "device_count", classmethod(lambda cls: 2))


def environment(cli, args: list[str], env: dict[str, str]) -> dict[str, str]:
    Path("train.py").write_text("pass\n")
    result = cli(["--dry-run", *args, "train.py"], env)
    assert result.status == 0, result.stderr
    return result.environment()


@pytest.mark.usefixtures("fake_cuda")
def test_a_cuda_job_gets_the_flight_recorders_dump_on_timeout(cli, tmp_path):
    env = environment(cli, ["--nproc-per-node", "2", "--log-dir", "logs"], CUDA)

    assert env["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "2000"
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    assert env["TORCH_FR_DUMP_TEMP_FILE"] == str(tmp_path / "logs" / "nccl_trace_rank_")


@pytest.mark.usefixtures("fake_cuda")
def test_without_a_log_dir_the_dumps_go_to_the_temp_dir(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    env = environment(cli, [], CUDA)

    assert env["TORCH_FR_DUMP_TEMP_FILE"] == str(tmp_path / "nccl_trace_rank_")


@pytest.mark.usefixtures("fake_cuda")
@pytest.mark.parametrize(("given", "left_out"), [
    ({"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}, "TORCH_NCCL_TRACE_BUFFER_SIZE"),
    ({"TORCH_FR_BUFFER_SIZE": "100"}, "TORCH_NCCL_TRACE_BUFFER_SIZE"),
    ({"TORCH_NCCL_DUMP_ON_TIMEOUT": "0"}, "TORCH_NCCL_DUMP_ON_TIMEOUT"),
    ({"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/data/fr_"}, "TORCH_FR_DUMP_TEMP_FILE"),
])
def test_the_users_own_value_wins_under_either_name(cli, given, left_out):
    env = environment(cli, [], {**CUDA, **given})

    assert left_out not in env
    assert len([name for name in env if name.startswith(("TORCH_NCCL_", "TORCH_FR_"))]) == 2 + (
        "TORCH_NCCL_ASYNC_ERROR_HANDLING" in env)


def test_a_cpu_job_gets_none_of_it(cli):
    env = environment(cli, [], {"ACCEL_ACCELERATOR": "cpu"})

    assert not [name for name in env if name.startswith(("TORCH_NCCL_DUMP", "TORCH_FR_", "TORCH_NCCL_TRACE"))]
