"""Which node this is: our override, Slurm, OpenMPI; Slurm host lists."""

from __future__ import annotations

import pytest

from launcher.contract.hosts import NodeSpec
from launcher.contract.node_table import node_row_env, node_table_env, parse_node_table
from launcher.errors import NodeIdentityError
from launcher.node.identity import NodeIdentity, expand_nodelist, node_identity

NODES = (NodeSpec("h1", (0, 1, 2)), NodeSpec("h2", (0, 2)))
TABLE = node_table_env(NODES)


def test_the_node_table_round_trips() -> None:
    assert TABLE == {"ACCEL_NODE_HOSTS": "h1,h2", "ACCEL_NODE_DEVICES": "0,1,2;0,2"}
    assert parse_node_table(TABLE) == NODES


def test_nothing_known_gives_none() -> None:
    assert node_identity({"PATH": "/bin"}) is None


def test_ssh_override_gives_rank_master_and_devices() -> None:
    assert node_identity({**TABLE, "ACCEL_NODE_RANK": "1"}) == NodeIdentity(1, 2, "h1", "ACCEL_NODE_RANK", NODES[1])


def test_an_ssh_node_with_only_its_own_row_and_the_count_gets_its_rank_count_and_devices() -> None:
    environ = node_row_env(NODES, 1)
    assert environ == {"ACCEL_NODE_HOSTS": "h2", "ACCEL_NODE_DEVICES": "0,2", "ACCEL_NODE_RANK": "1",
                       "ACCEL_NODE_COUNT": "2"}
    assert node_identity(environ) == NodeIdentity(1, 2, None, "ACCEL_NODE_RANK", NODES[1])


def test_pdsh_override_finds_the_rank_by_host_name() -> None:
    assert node_identity({**TABLE, "ACCEL_NODE_HOST": "h2"}) == NodeIdentity(1, 2, "h1", "ACCEL_NODE_HOST", NODES[1])


def test_the_override_wins_over_slurm_and_openmpi() -> None:
    environ = {**TABLE, "ACCEL_NODE_RANK": "0", "SLURM_PROCID": "1", "SLURM_NTASKS": "2", "OMPI_COMM_WORLD_RANK": "1"}
    assert node_identity(environ).source == "ACCEL_NODE_RANK"


def test_slurm_gives_rank_count_and_the_first_host_of_the_step() -> None:
    environ = {
        "SLURM_PROCID": "2", "SLURM_NTASKS": "3", "SLURM_NNODES": "3",
        "SLURM_JOB_NODELIST": "big[001-100]", "SLURM_STEP_NODELIST": "gpu[07-08],cpu1",
    }
    assert node_identity(environ) == NodeIdentity(2, 3, "gpu07", "Slurm", None)


def test_slurm_finds_the_node_table_entry_by_host_name_not_task_order_and_numbers_the_node_as_the_table_does() -> None:
    environ = {**TABLE, "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "h[1-2]", "SLURMD_NODENAME": "h2"}
    # The head counted each node's ranks in the table's order: the node's rank is its row, not Slurm's task number.
    assert node_identity(environ) == NodeIdentity(1, 2, "h1", "Slurm", NODES[1], "h2")


def test_openmpi_gives_rank_and_count_and_the_table_entry_by_rank() -> None:
    environ = {**TABLE, "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}
    assert node_identity(environ) == NodeIdentity(1, 2, "h1", "OpenMPI", NODES[1])


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"ACCEL_NODE_RANK": "0"}, "ACCEL_NODE_RANK"),
        ({**TABLE, "ACCEL_NODE_RANK": "2"}, "ACCEL_NODE_RANK"),
        ({**TABLE, "ACCEL_NODE_RANK": "one"}, "ACCEL_NODE_RANK"),
        ({**TABLE, "ACCEL_NODE_HOST": "h9"}, "ACCEL_NODE_HOST"),
        ({"ACCEL_NODE_HOSTS": "h1,,h2", "ACCEL_NODE_DEVICES": "0;0;0", "ACCEL_NODE_RANK": "0"}, "ACCEL_NODE_HOSTS"),
        ({"ACCEL_NODE_HOSTS": "h1", "ACCEL_NODE_RANK": "0"}, "ACCEL_NODE_HOSTS"),
        ({**TABLE, "ACCEL_NODE_DEVICES": "0,1", "ACCEL_NODE_RANK": "0"}, "ACCEL_NODE_DEVICES"),
        ({**TABLE, "ACCEL_NODE_DEVICES": "0,x;1", "ACCEL_NODE_RANK": "0"}, "ACCEL_NODE_DEVICES"),
        ({**TABLE, "ACCEL_NODE_DEVICES": "0,1;", "ACCEL_NODE_RANK": "0"}, "ACCEL_NODE_DEVICES"),
        ({"SLURM_PROCID": "x", "SLURM_NTASKS": "2"}, "SLURM_PROCID"),
        ({"SLURM_PROCID": "2", "SLURM_NTASKS": "2"}, "SLURM_PROCID"),
        ({"SLURM_PROCID": "0"}, "SLURM_NTASKS"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "0"}, "SLURM_NTASKS"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "8", "SLURM_NNODES": "2"}, "SLURM_NTASKS"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_NNODES": "a"}, "SLURM_NNODES"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_JOB_NODELIST": "n[1-"}, "SLURM_JOB_NODELIST"),
        ({**TABLE, "SLURM_PROCID": "0", "SLURM_NTASKS": "3"}, "ACCEL_NODE_HOSTS"),
        ({"OMPI_COMM_WORLD_RANK": "0"}, "OMPI_COMM_WORLD_SIZE"),
        ({"OMPI_COMM_WORLD_RANK": "-1", "OMPI_COMM_WORLD_SIZE": "2"}, "OMPI_COMM_WORLD_RANK"),
        ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
         "OMPI_COMM_WORLD_LOCAL_RANK"),

        # counts and ranks: ASCII digits only, and bounded (launcher.limits) before anything is expanded
        ({**TABLE, "ACCEL_NODE_RANK": "\u0661"}, "ACCEL_NODE_RANK"),
        ({**TABLE, "ACCEL_NODE_RANK": "99999999999999999999"}, "ACCEL_NODE_RANK"),
        ({**TABLE, "ACCEL_NODE_DEVICES": "0,99999;1", "ACCEL_NODE_RANK": "0"}, "ACCEL_NODE_DEVICES"),
        ({**TABLE, "ACCEL_NODE_DEVICES": "0,1_0;1", "ACCEL_NODE_RANK": "0"}, "ACCEL_NODE_DEVICES"),
        ({"ACCEL_NODE_HOSTS": "h", "ACCEL_NODE_DEVICES": ",".join(["0"] * 4097), "ACCEL_NODE_RANK": "0"},
         "ACCEL_NODE_DEVICES"),
        ({**node_row_env(NODES, 1), "ACCEL_NODE_COUNT": "1"}, "ACCEL_NODE_RANK"),
        ({**node_row_env(NODES, 1), "ACCEL_NODE_COUNT": "99999999999999999999"}, "ACCEL_NODE_COUNT"),
        ({**TABLE, "ACCEL_NODE_RANK": "0", "ACCEL_NODE_COUNT": "2"}, "ACCEL_NODE_HOSTS"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "99999999999999999999"}, "SLURM_NTASKS"),
        ({"SLURM_PROCID": "\uff10", "SLURM_NTASKS": "1"}, "SLURM_PROCID"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_JOB_NODELIST": "n[0-999999999]"}, "SLURM_JOB_NODELIST"),
        ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "70000"}, "OMPI_COMM_WORLD_SIZE"),
    ],
)
def test_a_malformed_value_is_an_error_naming_the_variable(environ: dict, variable: str) -> None:
    with pytest.raises(NodeIdentityError) as caught:
        node_identity(environ)
    assert caught.value.variable == variable and str(caught.value).startswith(f"{variable}=")


@pytest.mark.parametrize(
    ("nodelist", "hosts"),
    [
        ("node1", ("node1",)),
        ("node[01-03,07]", ("node01", "node02", "node03", "node07")),
        ("a,b[1-2],c", ("a", "b1", "b2", "c")),
        ("n[8-11]", ("n8", "n9", "n10", "n11")),
        ("n[098-101]", ("n098", "n099", "n100", "n101")),
        ("rack[1-2]-n[1-2]", ("rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2")),
        ("gpu[3]-ib", ("gpu3-ib",)),
        ("x[1-2],y[0]", ("x1", "x2", "y0")),
    ],
)
def test_slurm_host_lists_expand_in_order(nodelist: str, hosts: tuple[str, ...]) -> None:
    assert expand_nodelist(nodelist) == hosts


@pytest.mark.parametrize("nodelist", ["", "a,", "n[1-", "n]1[", "n[3-1]", "n[a-b]", "n[1-2-3]", "n[[1]]", "n[]", "a b",
                                      "n[0-999999999]", "n[0-65536]", "a[0-999]b[0-999]", "n[0-" + "9" * 5000 + "]",
                                      "n[\u0661-\u0663]", "n[1_0]"])
def test_a_malformed_or_too_long_slurm_host_list_is_a_value_error_before_any_range_is_expanded(nodelist: str) -> None:
    with pytest.raises(ValueError):
        expand_nodelist(nodelist)


def test_a_host_list_of_exactly_the_most_nodes_expands() -> None:
    assert len(expand_nodelist("n[1-65536]")) == 65536


def test_slurm_and_openmpi_job_ids_are_the_default_rendezvous_id_of_every_node() -> None:
    slurm = {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0"}
    assert node_identity(slurm).job_id == "slurm-42.0"
    openmpi = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_MCA_ess_base_jobid": "123"}
    assert node_identity(openmpi).job_id == "openmpi-123"
    assert node_identity({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}).job_id is None
