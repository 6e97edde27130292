"""A rank's device under --virtual-local-rank (launcher/run/group/rank_start.py), on both paths: torch's own rule,
checked beside torch's `_set_local_rank_env`; a device list too short is refused before any rank starts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent

from accelerators.cpu import CPUAccelerator
from accelerators.cuda import CUDAAccelerator
from accelerators.hpu import HPUAccelerator
from launcher.errors import UsageError
from launcher.contract.job_config import RankPlace
from launcher.node.node_env import check_virtual_devices
from launcher.run.group.rank_start import worker_env
from tests.launches import RECORD_RANK, CliRunnerFn


def _place(local_rank: int, virtual: bool, accelerator: type = CUDAAccelerator) -> RankPlace:
    return RankPlace(local_rank=local_rank, rank=local_rank, role="default", role_rank=local_rank, group_rank=0,
                     local_world_size=3, world_size=3, group_world_size=1, role_world_size=3,
                     master=("127.0.0.1", 29500), run_id="none", virtual_local_rank=virtual,
                     visible_devices_env=accelerator.visible_devices_env)


@pytest.mark.parametrize("visible", [None, "6,3,1", " 5 , 7,2", "GPU-aa,GPU-bb,GPU-cc"])
@pytest.mark.parametrize("virtual", [True, False])
@pytest.mark.parametrize("local_rank", [0, 2])
def test_a_cuda_ranks_local_rank_and_visible_devices_are_what_torch_elastic_gives(
        monkeypatch: pytest.MonkeyPatch, visible: str | None, virtual: bool, local_rank: int) -> None:
    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    theirs: dict[str, str | None] = dict(environ)
    LocalElasticAgent._set_local_rank_env(None, theirs, local_rank, SimpleNamespace(virtual_local_rank=virtual))

    ours = worker_env(_place(local_rank, virtual), environ)
    names = ("LOCAL_RANK", "CUDA_VISIBLE_DEVICES")
    assert {name: ours.get(name) for name in names} == {name: theirs.get(name) for name in names}


def test_another_device_gets_its_own_variable_and_a_cpu_rank_only_its_local_rank() -> None:
    environ = {"HABANA_VISIBLE_MODULES": "4,5,6", "CUDA_VISIBLE_DEVICES": "0,1,2"}
    hpu = worker_env(_place(2, True, HPUAccelerator), environ)
    assert (hpu["LOCAL_RANK"], hpu["HABANA_VISIBLE_MODULES"], hpu["CUDA_VISIBLE_DEVICES"]) == ("0", "6", "0,1,2")
    cpu = worker_env(_place(2, True, CPUAccelerator), {})
    assert cpu["LOCAL_RANK"] == "0" and "CUDA_VISIBLE_DEVICES" not in cpu


def test_a_device_list_shorter_than_the_ranks_is_refused_naming_the_variable() -> None:
    with pytest.raises(UsageError, match="HABANA_VISIBLE_MODULES: '4,5'.*each of the 3 ranks"):
        check_virtual_devices(3, "HABANA_VISIBLE_MODULES", {"HABANA_VISIBLE_MODULES": "4,5"})
    check_virtual_devices(2, "HABANA_VISIBLE_MODULES", {"HABANA_VISIBLE_MODULES": "4,5"})
    check_virtual_devices(3, None, {"CUDA_VISIBLE_DEVICES": "4,5"})  # a CPU job hands out no device


def test_a_launch_with_too_few_devices_for_its_virtual_local_ranks_is_one_line_and_exit_2(
        cli: CliRunnerFn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CUDAAccelerator, "is_available", classmethod(lambda cls: True))  # no GPU here
    monkeypatch.setattr(CUDAAccelerator, "device_count", classmethod(lambda cls: 2))
    result = cli(["--dry-run", "--virtual-local-rank", "--nproc-per-node", "2", str(RECORD_RANK)],
                 env={"CUDA_VISIBLE_DEVICES": "1", "ACCEL_ACCELERATOR": "cuda"})
    assert result.status == 2
    assert result.stderr == ("accel-launch: error: invalid value for CUDA_VISIBLE_DEVICES: '1' (--virtual-local-rank "
                             "gives each of the 2 ranks of this node one device of this list)\n")
