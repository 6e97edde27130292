"""The runner commands, compared as argument lists; the registry, and what a new runner takes."""

from __future__ import annotations

import ast
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

import launcher

from launcher.contract.hosts import NodeSpec
from launcher.errors import MultinodeError
from launcher.head.runner_options import RunnerOptions
from launcher.head.runners import (DEFAULT_RUNNER, REFUSED_RUNNERS, RUNNERS, LaunchCommand, OpenMpiRunner,
                                             PdshRunner, Runner, SlurmRunner, SshRunner)
from launcher.head.selection import HostFlags

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


class EchoRunner(Runner):
    """A runner that exists only in this test: one local `echo` of the node launcher command."""

    name = program = "echo"

    def commands(self, nodes: Sequence[NodeSpec], argv: Sequence[str], env: Mapping[str, str],
                 cwd: str) -> tuple[LaunchCommand, ...]:
        return (LaunchCommand((self.program, *self.extra_args(), *argv), env),)


def test_a_new_runner_is_one_class_and_its_place_in_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(RUNNERS, EchoRunner.name, EchoRunner)
    runner = HostFlags(runner="echo", launcher_args="-n").make_runner()
    assert runner.commands(NODES, ARGV, {"V": "1"}, "/w") == (LaunchCommand(("echo", "-n", *ARGV), {"V": "1"}),)
    with pytest.raises(MultinodeError, match="--comment is srun's .*: give --launcher slurm, or drop --comment"):
        HostFlags(runner="echo", comment="c").make_runner().check()


def _literal_modules(name: str) -> set[str]:
    """The modules of launcher/ with a string literal that is `name`, in any case."""
    root = Path(launcher.__file__).parent
    return {str(path.relative_to(root)) for path in root.rglob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.lower() == name}


@pytest.mark.parametrize("name", [*RUNNERS, *REFUSED_RUNNERS])
def test_a_runner_s_name_is_written_in_its_class_and_at_most_the_node_s_reading_of_its_variables(name: str) -> None:
    assert _literal_modules(name) <= {"head/runners.py", "node/identity.py"}
