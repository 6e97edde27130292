"""The runner commands, compared as argument lists."""

from __future__ import annotations

import shlex

import pytest

from launcher.contract.hosts import NodeSpec
from launcher.errors import MultinodeError
from launcher.multinode.head.runner_options import RunnerOptions
from launcher.multinode.head.runners import (DEFAULT_RUNNER, REFUSED_RUNNERS, RUNNERS, LaunchCommand, OpenMpiRunner,
                                             PdshRunner, SlurmRunner, SshRunner)

NODES = (NodeSpec("h1", (0, 1, 2)), NodeSpec("h2", (1,)))
ENV = {"ACCEL_COMPILE_BACKEND": "eager", "NCCL_DEBUG": "INFO"}
TABLE = {"ACCEL_NODE_HOSTS": "h1,h2", "ACCEL_NODE_DEVICES": "0,1,2;1"}
ARGV = ["accel-launch", "--nnodes", "2", "train.py", "--msg", "a b"]


def test_ssh_starts_one_command_per_node_with_its_own_rank() -> None:
    runner = SshRunner(RunnerOptions(ssh_port=2222, ssh_options=("ConnectTimeout=5",)))
    commands = runner.commands(NODES, ARGV, ENV, "/work dir")
    assert [command.host for command in commands] == ["h1", "h2"]
    first = commands[0].argv
    assert list(first[:-1]) == [
        "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
        "-p", "2222", "-o", "ConnectTimeout=5", "h1",
    ]
    cd, _, rest = first[-1].partition(" && exec ")
    assert shlex.split(cd) == ["cd", "/work dir"]
    assert shlex.split(rest) == [
        "env", "ACCEL_COMPILE_BACKEND=eager", "NCCL_DEBUG=INFO", "ACCEL_NODE_HOSTS=h1", "ACCEL_NODE_DEVICES=0,1,2",
        "ACCEL_NODE_RANK=0", "ACCEL_NODE_COUNT=2", *ARGV,
    ]
    second = shlex.split(commands[1].argv[-1])
    assert {"ACCEL_NODE_HOSTS=h2", "ACCEL_NODE_DEVICES=1", "ACCEL_NODE_RANK=1", "ACCEL_NODE_COUNT=2"} <= set(second)
    assert commands[0].env == {}


def test_ssh_without_port_or_options_adds_none() -> None:
    (command, _) = SshRunner().commands(NODES, ARGV, {}, "/")
    assert list(command.argv[:6]) == ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "h1"]


def test_pdsh_is_one_command_over_ssh_whose_remote_names_the_host_with_percent_h() -> None:
    (command,) = PdshRunner().commands(NODES, ARGV, {"V": "50%"}, "/w")
    assert command.argv[:6] == ("pdsh", "-S", "-f", "1024", "-w", "h1,h2")
    assert command.env == {"PDSH_RCMD_TYPE": "ssh"}
    words = shlex.split(command.argv[6].partition(" && exec ")[2])
    assert words == [
        "env", "ACCEL_NODE_HOST=%h", "V=50%%", *(f"{k}={v}" for k, v in TABLE.items()),
        "accel-launch", "--nnodes", "2", "train.py", "--msg", "a b",
    ]


def test_openmpi_starts_one_unbound_node_launcher_per_host_and_exports_by_name() -> None:
    (command,) = OpenMpiRunner(RunnerOptions(launcher_args="--allow-run-as-root")).commands(NODES, ARGV, ENV, "/w")
    assert command == LaunchCommand(
        (
            "mpirun", "-n", "2", "--host", "h1:1,h2:1", "--map-by", "ppr:1:node", "--bind-to", "none",
            "--wdir", "/w", "-x", "ACCEL_COMPILE_BACKEND", "-x", "NCCL_DEBUG",
            "-x", "ACCEL_NODE_HOSTS", "-x", "ACCEL_NODE_DEVICES", "--allow-run-as-root",
            "accel-launch", "--nnodes", "2", "train.py", "--msg", "a b",
        ),
        {**ENV, **TABLE},
    )


def test_slurm_runs_one_task_per_node_and_exports_the_names_with_values_in_its_env() -> None:
    (command,) = SlurmRunner().commands(NODES, ARGV, ENV, "/w")
    assert command == LaunchCommand(
        (
            "srun", "--nodes", "2", "--ntasks", "2", "--ntasks-per-node", "1", "--nodelist", "h1,h2",
            "--chdir", "/w", "--kill-on-bad-exit=1",
            "--export=ALL,ACCEL_COMPILE_BACKEND,NCCL_DEBUG,ACCEL_NODE_HOSTS,ACCEL_NODE_DEVICES",
            "accel-launch", "--nnodes", "2", "train.py", "--msg", "a b",
        ),
        {**ENV, **TABLE},
    )


@pytest.mark.parametrize("runner", [PdshRunner, OpenMpiRunner, SlurmRunner])
def test_a_node_table_too_long_for_one_argument_is_refused_before_anything_runs(runner) -> None:
    nodes = [NodeSpec(f"host{index}", tuple(range(8))) for index in range(10000)]
    with pytest.raises(MultinodeError, match="Linux takes at most 131072: select fewer hosts, or use the ssh runner"):
        runner().commands(nodes, ARGV, ENV, "/w")


def test_ssh_sends_each_of_10000_nodes_only_its_own_row() -> None:
    nodes = [NodeSpec(f"host{index}", tuple(range(8))) for index in range(10000)]
    commands = SshRunner().commands(nodes, ARGV, ENV, "/w")
    assert "ACCEL_NODE_HOSTS=host9999 ACCEL_NODE_DEVICES=0,1,2,3,4,5,6,7" in commands[-1].argv[-1]
    assert max(len(command.argv[-1]) for command in commands) < 400


def test_the_registry_lists_each_runner_once_under_its_own_name_with_ssh_first() -> None:
    assert list(RUNNERS) == ["ssh", "pdsh", "openmpi", "slurm"]
    assert all(runner.name == name for name, runner in RUNNERS.items())
    assert DEFAULT_RUNNER == "ssh"
    assert not set(RUNNERS) & set(REFUSED_RUNNERS)
