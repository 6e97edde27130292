"""Commands that start one node launcher per selected node through ssh, pdsh, OpenMPI or Slurm.

Each builder returns `LaunchCommand`s: an argument list to run locally (never a shell string) and the
variables to add to that local process's environment. `node_argv(node)` is the node launcher
command a node runs; ssh asks for each node's own, the others ask once with `None` and start that
same command everywhere, each node then finding itself with `node_identity` (from `ACCEL_NODE_HOST`,
`SLURM_PROCID` or `OMPI_COMM_WORLD_RANK`) and its devices in the node table (`ACCEL_NODE_HOSTS`,
`ACCEL_NODE_DEVICES`), which every node receives along with `env`; over ssh a node gets only its own
row of it (`node_row_env`), so that the head's work grows with the number of nodes, not its square.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from launcher.contract.hosts import NodeSpec
from launcher.contract.node_table import node_row_env, node_table_env
from launcher.errors import MultinodeError
from launcher.multinode.head.remote_shell import pdsh_shell_command, shell_command

__all__ = ["LaunchCommand", "NodeArgv", "MAX_ARGUMENT_BYTES", "ssh_commands", "pdsh_command", "openmpi_command",
           "slurm_command"]

NodeArgv = Callable[[NodeSpec | None], list[str]]
MAX_ARGUMENT_BYTES = 128 * 1024  # Linux's MAX_ARG_STRLEN: one argument, or one NAME=value, with its NUL


@dataclass(frozen=True)
class LaunchCommand:
    """One local process to start: `argv`, with `env` added to the launcher's own environment."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    host: str | None = None

    def __post_init__(self) -> None:
        words = [*self.argv, *(f"{name}={value}" for name, value in self.env.items())]
        longest = max(words, key=len)
        if len(longest.encode()) >= MAX_ARGUMENT_BYTES:
            raise MultinodeError(
                f"the {self.argv[0]} command{f' for {self.host}' if self.host else ''} would pass "
                f"{len(longest.encode())} bytes in one argument or variable ({longest[:30]!r}...), and Linux takes "
                f"at most {MAX_ARGUMENT_BYTES}: select fewer hosts, or use the ssh runner, which sends each node "
                "only its own row of the node table")


def ssh_commands(
    nodes: Sequence[NodeSpec],
    node_argv: NodeArgv,
    env: Mapping[str, str],
    cwd: str,
    port: int | None = None,
    identity_file: str | None = None,
    options: Sequence[str] = (),
    launcher_args: Sequence[str] = (),
    prefix: Sequence[str] = (),
) -> tuple[LaunchCommand, ...]:
    """One `ssh HOST REMOTE` per node; `options` are extra `-o` values (`"ConnectTimeout=10"`), `launcher_args`
    more ssh arguments, `prefix` a command the remote shell runs the node launcher under."""
    base = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new"]
    base += ["-p", str(port)] if port is not None else []
    base += ["-i", identity_file] if identity_file is not None else []
    base += [word for option in options for word in ("-o", option)]
    base += launcher_args
    commands = []
    for rank, node in enumerate(nodes):
        node_env = {**env, **node_row_env(nodes, rank)}
        remote = shell_command(cwd, node_env, node_argv(node), prefix)
        commands.append(LaunchCommand((*base, node.host, remote), host=node.host))
    return tuple(commands)


def pdsh_command(
    nodes: Sequence[NodeSpec], node_argv: NodeArgv, env: Mapping[str, str], cwd: str,
    launcher_args: Sequence[str] = (), prefix: Sequence[str] = (),
) -> tuple[LaunchCommand, ...]:
    """One `pdsh` over ssh for all nodes; `-S` makes its exit status the worst node's; `launcher_args` follow
    `-w`, as DeepSpeed places them."""
    remote = pdsh_shell_command(cwd, {**env, **node_table_env(nodes)}, node_argv(None), prefix)
    argv = ("pdsh", "-S", "-f", "1024", "-w", ",".join(node.host for node in nodes), *launcher_args, remote)
    return (LaunchCommand(argv, {"PDSH_RCMD_TYPE": "ssh"}),)


def openmpi_command(
    nodes: Sequence[NodeSpec],
    node_argv: NodeArgv,
    env: Mapping[str, str],
    cwd: str,
    launcher_args: Sequence[str] = (),
) -> tuple[LaunchCommand, ...]:
    """One `mpirun` that starts one node launcher per host (unbound: it starts the ranks itself)."""
    node_env = {**env, **node_table_env(nodes)}
    argv = ["mpirun", "-n", str(len(nodes)), "--host", ",".join(f"{node.host}:1" for node in nodes)]
    argv += ["--map-by", "ppr:1:node", "--bind-to", "none", "--wdir", cwd]
    argv += [word for name in node_env for word in ("-x", name)]
    argv += [*launcher_args, *node_argv(None)]
    return (LaunchCommand(tuple(argv), node_env),)


def slurm_command(
    nodes: Sequence[NodeSpec],
    node_argv: NodeArgv,
    env: Mapping[str, str],
    cwd: str,
    launcher_args: Sequence[str] = (),
) -> tuple[LaunchCommand, ...]:
    """One `srun` step with one task per node; a failing node ends the step (`--kill-on-bad-exit`)."""
    node_env = {**env, **node_table_env(nodes)}
    count = str(len(nodes))
    argv = ["srun", "--nodes", count, "--ntasks", count, "--ntasks-per-node", "1"]
    argv += ["--nodelist", ",".join(node.host for node in nodes), "--chdir", cwd, "--kill-on-bad-exit=1"]
    argv += [f"--export={','.join(['ALL', *node_env])}", *launcher_args, *node_argv(None)]
    return (LaunchCommand(tuple(argv), node_env),)
