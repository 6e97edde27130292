"""Where a node sits relative to the rendezvous endpoint, and what the plan tells torch about it."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.contract.resolved_backend import ResolvedBackend
from launcher.contract.job_config import JobConfig, RunSettings
from launcher.contract.program import Program
from launcher.node.addresses import GLOO_IFNAME_VAR, Placement, place_node
from launcher.job.build_job import prepare_job
from launcher.job.options import LaunchOptions
from launcher.node.rendezvous_choice import rendezvous


@pytest.mark.parametrize(("own", "hosts_store"), [("node0", True), ("node1", False)])
def test_a_named_node_hosts_the_store_exactly_when_the_endpoint_is_its_name(own: str, hosts_store: bool) -> None:
    placement = place_node(own, "node0:29500", {})
    assert (placement.node_addr, placement.hosts_store) == (own, hosts_store)


def test_a_node_started_by_hand_on_the_endpoints_machine_hosts_the_store_at_the_address_it_reaches_it_by() -> None:
    assert place_node(None, "127.0.0.1:29500", {}) == Placement("127.0.0.1", True, {})


def test_an_endpoint_that_resolves_nowhere_leaves_both_to_torch() -> None:
    assert place_node(None, "no-such-host.invalid:29500", {}) == Placement(None, False, {})


def test_gloo_is_never_pointed_at_loopback_nor_over_the_users_own_choice() -> None:
    assert GLOO_IFNAME_VAR not in place_node("127.0.0.1", "127.0.0.1:1", {}).rank_env
    assert place_node("127.0.0.1", "127.0.0.1:1", {GLOO_IFNAME_VAR: "eth9"}).rank_env == {}


BACKEND = ResolvedBackend("eager", "--compile-backend", "eager")


def test_the_plan_tells_torch_which_node_hosts_the_store_and_its_address() -> None:
    config = JobConfig(Program("script", "train.py"), BACKEND, 1, nnodes="2", rdzv_endpoint="10.0.0.1:29500")
    meeting = rendezvous(config, 1, "cpu", Placement("10.0.0.2", False, {}))
    assert (meeting.backend, meeting.endpoint) == ("accel-c10d", "10.0.0.1:29500")
    assert meeting.options["accel_node_addr"] == "10.0.0.2" and meeting.options["is_host"] is False
    unknown = rendezvous(config, 1, "cpu", Placement(None, None, {}))
    assert "is_host" not in unknown.options and "accel_node_addr" not in unknown.options


def test_under_slurm_the_nodes_meet_at_the_first_node_under_the_job_id_and_master_port_sets_only_the_port(
        tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("")
    environ = {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "gpu[1-2]", "SLURM_JOB_ID": "7",
               "SLURM_STEP_ID": "0", "SLURMD_NODENAME": "gpu2", "ACCEL_ACCELERATOR": "cpu"}
    prepared = prepare_job(LaunchOptions(Program("script", "train.py"), RunSettings(master_port=1234)), environ, tmp_path)
    assert (prepared.config.rdzv_endpoint, prepared.config.rdzv_id) == ("gpu1:1234", "slurm-7.0")
    options = prepared.plan.rendezvous.options
    assert (options["accel_node_addr"], options["is_host"]) == ("gpu2", False)
