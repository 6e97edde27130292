"""Which compiled graphs a node's cuda ranks can share (docs/CONTRACT.md, section 7): inductor's key holds the
device index, so ranks on `cuda:0` and `cuda:1` never share a graph; with --virtual-local-rank every rank compiles
for `cuda:0` (its one visible device), so they do. No GPU here: the launcher and ranks see two cuda devices through
the one seam tests/faults/fake_cuda fakes, and the keys are torch's own, on fake tensors. Each path gives the ranks
their devices with --virtual-local-rank: that test runs on both (tests/conftest.py, `launch_path`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.jobs import FAKE_CUDA
from tests.launches import Launcher

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

KEY = str(Path(__file__).resolve().parents[2] / "scripts" / "device_graph_key.py")
TWO_GPUS = {"PYTHONPATH": str(FAKE_CUDA), "FAULTS_FAKE_CUDA_DEVICES": "2", "ACCEL_ACCELERATOR": "cuda",
            "CUDA_VISIBLE_DEVICES": "6,3"}


@pytest.mark.usefixtures("launch_path")
def test_with_virtual_local_rank_the_ranks_of_a_node_compute_one_key_and_see_one_device_each(
        launch: Launcher) -> None:
    done = launch(["--nproc-per-node", "2", "--virtual-local-rank", KEY], env=TWO_GPUS)
    assert done.returncode == 0, done.stderr
    records = done.records()
    assert [records[rank]["visible"] for rank in (0, 1)] == ["6", "3"]
    assert {records[rank]["device"] for rank in (0, 1)} == {"cuda:0"}
    assert records[0]["key"] == records[1]["key"]


def test_without_it_each_local_rank_compiles_for_its_own_device_under_its_own_key(launch: Launcher) -> None:
    done = launch(["--nproc-per-node", "2", KEY], env=TWO_GPUS)
    assert done.returncode == 0, done.stderr
    records = done.records()
    assert [records[rank]["visible"] for rank in (0, 1)] == ["6,3", "6,3"]
    assert records[0]["key"] != records[1]["key"]
