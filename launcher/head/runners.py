"""The runners of a hostfile launch, one class each, and their registry: what `--launcher` offers, the checks and
the dispatch all read `RUNNERS` (DeepSpeed's MPI runners that we do not drive are `REFUSED_RUNNERS`).

A runner turns the node launcher command into `LaunchCommand`s: an argument list to run locally (never a shell
string) and the variables to add to that local process's environment. Every node runs the same command, finding
itself with `node_identity` (launcher/node/identity.py: from the variables the runner or its engine
sets) and its devices in the node table (`ACCEL_NODE_HOSTS`, `ACCEL_NODE_DEVICES`), which every node receives
along with `env`; a runner with one process per node sends each node only its own row (`node_row_env`), so
that the head's work grows with the number of nodes, not its square.

Over ssh and pdsh a node runs one string in its remote POSIX shell (sh, bash, dash, zsh):
`cd CWD && exec [PREFIX...] env K=V ... ARGV...`, every word quoted with `shlex.quote`, so arguments with spaces,
quotes, `$`, `;`, newlines or any other character reach the node launcher exactly as given; `exec` makes the
node launcher replace the remote shell, so signals from sshd reach it directly.
"""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from launcher.contract.hosts import NodeSpec
from launcher.contract.names import NODE_HOST_VAR
from launcher.contract.node_table import node_row_env, node_table_env
from launcher.errors import MultinodeError
from launcher.head.runner_options import RunnerOptions

__all__ = ["LaunchCommand", "MAX_ARGUMENT_BYTES", "Runner", "SshRunner", "PdshRunner", "OpenMpiRunner",
           "SlurmRunner", "RUNNERS", "DEFAULT_RUNNER", "REFUSED_RUNNERS", "own_flag_help"]

MAX_ARGUMENT_BYTES = 128 * 1024  # Linux's MAX_ARG_STRLEN: one argument, or one NAME=value, with its NUL


@dataclass(frozen=True)
class LaunchCommand:
    """One local process to start: `argv`, with `env` added to the launcher's own environment; `host`: the one
    node it reaches, for a runner with a process per node, whose node launcher watches this process's stdin."""

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


@dataclass(frozen=True)
class Runner(ABC):
    """One way to start a node launcher on every selected node, with DeepSpeed's pass-through flags as given."""

    name: ClassVar[str]  # its --launcher choice
    program: ClassVar[str]  # the local program it runs, looked up on PATH
    # One process per node whose stdin reaches the node launcher, which stops its ranks when it closes.
    per_node: ClassVar[bool] = False
    own_flags: ClassVar[tuple[tuple[str, str], ...]] = ()  # (RunnerOptions field, flag) that only it takes

    options: RunnerOptions = RunnerOptions()

    @abstractmethod
    def commands(self, nodes: Sequence[NodeSpec], argv: Sequence[str], env: Mapping[str, str],
                 cwd: str) -> tuple[LaunchCommand, ...]:
        """The local processes that run `argv` in `cwd` on every one of `nodes`, with `env` and the node table."""

    def check(self) -> None:
        """One MultinodeError for what this runner cannot take: another runner's own flag, `--launcher_args`
        with unbalanced quotes, an empty venv script."""
        others = [runner for runner in RUNNERS.values() if runner is not type(self)]
        for other in others:
            for name, flag in other.own_flags:
                if getattr(self.options, name):
                    raise MultinodeError(f"{flag} is {other.program}'s (DeepSpeed passes it to {other.program} "
                                         f"alone): give --launcher {other.name}, or drop {flag}")
        self.options.check()

    def extra_args(self) -> list[str]:
        """The words added to the runner's command: `--launcher_args`'s, then this runner's own flags."""
        own = [word for name, flag in self.own_flags if getattr(self.options, name)
               for word in (flag, getattr(self.options, name))]
        return [*self.options.launcher_words(), *own]


class SshRunner(Runner):
    """One `ssh HOST REMOTE` per node, each node given its own row of the node table; `--ssh-option`s are
    extra `-o` values, `--launcher_args` more ssh arguments before the host."""

    name = program = "ssh"
    per_node = True

    def commands(self, nodes: Sequence[NodeSpec], argv: Sequence[str], env: Mapping[str, str],
                 cwd: str) -> tuple[LaunchCommand, ...]:
        base = [self.program, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new"]
        base += ["-p", str(self.options.ssh_port)] if self.options.ssh_port is not None else []
        base += [word for option in self.options.ssh_options for word in ("-o", option)]
        base += self.extra_args()
        prefix, commands = self.options.wrapper(), []
        for rank, node in enumerate(nodes):
            remote = self.remote(cwd, {**env, **node_row_env(nodes, rank)}, argv, prefix)
            commands.append(LaunchCommand((*base, node.host, remote), host=node.host))
        return tuple(commands)

    @staticmethod
    def remote(cwd: str, env: Mapping[str, str], argv: Sequence[str], prefix: Sequence[str] = ()) -> str:
        """The remote command line: change to `cwd`, exec `prefix` (a command that runs the rest), set `env`,
        exec `argv`."""
        return _remote_command(cwd, env, argv, escape=str, fill=(), prefix=prefix)


class PdshRunner(Runner):
    """One `pdsh` over ssh for all nodes; `-S` makes its exit status the worst node's; `--launcher_args` follow
    `-w`, as DeepSpeed places them.

    pdsh rewrites the command string before its ssh runs it: `%h`, `%u`, `%n` become the target host, the
    remote user and the host's index, `%%` becomes `%`, and any other `%x` stays as it is (a trailing lone `%`
    is undefined). So every `%` of ours is doubled, and one unescaped `ACCEL_NODE_HOST=%h` added, which pdsh
    fills with the host exactly as given to `-w`.
    """

    name = program = "pdsh"

    def commands(self, nodes: Sequence[NodeSpec], argv: Sequence[str], env: Mapping[str, str],
                 cwd: str) -> tuple[LaunchCommand, ...]:
        remote = self.remote(cwd, {**env, **node_table_env(nodes)}, argv, self.options.wrapper())
        hosts = ",".join(node.host for node in nodes)
        return (LaunchCommand((self.program, "-S", "-f", "1024", "-w", hosts, *self.extra_args(), remote),
                              {"PDSH_RCMD_TYPE": "ssh"}),)

    @classmethod
    def remote(cls, cwd: str, env: Mapping[str, str], argv: Sequence[str], prefix: Sequence[str] = ()) -> str:
        """As `SshRunner.remote`, escaped for pdsh, with `ACCEL_NODE_HOST=%h` for pdsh to fill in."""
        return _remote_command(cwd, env, argv, escape=cls.escape, fill=(f"{NODE_HOST_VAR}=%h",), prefix=prefix)

    @staticmethod
    def escape(text: str) -> str:
        """`text` as pdsh must be given it to pass it on unchanged."""
        return text.replace("%", "%%")


class OpenMpiRunner(Runner):
    """One `mpirun` that starts one node launcher per host (unbound: it starts the ranks itself), exporting the
    variables by name; `--launcher_args` go before the node launcher."""

    name, program = "openmpi", "mpirun"

    def commands(self, nodes: Sequence[NodeSpec], argv: Sequence[str], env: Mapping[str, str],
                 cwd: str) -> tuple[LaunchCommand, ...]:
        node_env = {**env, **node_table_env(nodes)}
        command = [self.program, "-n", str(len(nodes)), "--host", ",".join(f"{node.host}:1" for node in nodes)]
        command += ["--map-by", "ppr:1:node", "--bind-to", "none", "--wdir", cwd]
        command += [word for name in node_env for word in ("-x", name)]
        command += [*self.extra_args(), *self.options.wrapper(), *argv]
        return (LaunchCommand(tuple(command), node_env),)


class SlurmRunner(Runner):
    """One `srun` step with one task per node; a failing node ends the step (`--kill-on-bad-exit`);
    `--launcher_args`, then `--comment` and `--account`, go before the node launcher."""

    name, program = "slurm", "srun"
    own_flags = (("comment", "--comment"), ("account", "--account"))

    def commands(self, nodes: Sequence[NodeSpec], argv: Sequence[str], env: Mapping[str, str],
                 cwd: str) -> tuple[LaunchCommand, ...]:
        node_env = {**env, **node_table_env(nodes)}
        count = str(len(nodes))
        command = [self.program, "--nodes", count, "--ntasks", count, "--ntasks-per-node", "1"]
        command += ["--nodelist", ",".join(node.host for node in nodes), "--chdir", cwd, "--kill-on-bad-exit=1"]
        command += [f"--export={','.join(['ALL', *node_env])}", *self.extra_args(), *self.options.wrapper(), *argv]
        return (LaunchCommand(tuple(command), node_env),)


# The --launcher choices, in the order the help lists them; the first is the default.
RUNNERS: dict[str, type[Runner]] = {runner.name: runner for runner in (SshRunner, PdshRunner, OpenMpiRunner,
                                                                       SlurmRunner)}
DEFAULT_RUNNER = next(iter(RUNNERS))
# DeepSpeed's MPI runners that we do not drive, and what to use instead.
REFUSED_RUNNERS = dict.fromkeys(("mvapich", "impi", "mpich"), "use --launcher openmpi (one mpirun) or slurm (one srun "
                                "step), or start accel-launch under your own mpirun, one per node")


def own_flag_help(name: str) -> str:
    """The help of the flag that fills RunnerOptions field `name`, which one runner alone takes."""
    runner = next(runner for runner in RUNNERS.values() if name in dict(runner.own_flags))
    return f"{runner.program}'s {dict(runner.own_flags)[name]} (with --launcher {runner.name})."


def _remote_command(cwd: str, env: Mapping[str, str], argv: Sequence[str], escape: Callable[[str], str],
                    fill: Sequence[str], prefix: Sequence[str]) -> str:
    assignments = [f"{name}={value}" for name, value in env.items()]
    words = [escape(shlex.quote(word)) for word in assignments + list(argv)]
    first = [escape(shlex.quote(word)) for word in prefix]
    return " ".join([f"cd {escape(shlex.quote(cwd))} && exec", *first, "env", *fill, *words])
