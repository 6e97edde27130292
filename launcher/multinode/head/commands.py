"""The head of a hostfile launch: one node launcher per selected node, started through a runner.

The head resolves and checks the compile backend once and passes it, with its source, to every node,
so the nodes cannot disagree; each node and each rank still validate it themselves.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from launcher.prepare.config import JobConfig
from launcher.multinode.head.hostfile import parse_hostfile
from launcher.multinode.head.remote_env import remote_env
from launcher.multinode.head.runners import LaunchCommand, openmpi_command, pdsh_command, slurm_command, ssh_commands
from launcher.multinode.head.selection import NodeSpec, select_nodes

__all__ = ["HostSelection", "hostfile_commands", "describe_commands", "stop_when_stdin_closes"]

DEFAULT_RDZV_PORT = 29500
# The head's own per-node choices in its job environment: each node launcher makes its own.
_HEAD_ONLY = ("OMP_NUM_THREADS", "ACCEL_ACCELERATOR", "GLOO_SOCKET_IFNAME")
# Passed as --compile-backend / --compile-backend-source instead, so no node re-resolves them.
_PASSED_AS_FLAGS = ("ACCEL_COMPILE_BACKEND_SOURCE", "ACCEL_COMPILE_BACKEND")


@dataclass(frozen=True)
class HostSelection:
    """The multi-node part of the command line."""

    hostfile: str
    include: str = ""
    exclude: str = ""
    num_nodes: int = -1
    num_gpus: int = -1
    runner: str = "ssh"
    exports: tuple[str, ...] = ()
    ssh_port: int | None = None
    ssh_options: tuple[str, ...] = ()


def hostfile_commands(selection: HostSelection, job: JobConfig, options, environ: Mapping[str, str],
                      cwd: Path) -> tuple[LaunchCommand, ...]:
    """The runner processes that start `job` on every selected node of the hostfile."""
    nodes = select_nodes(parse_hostfile(selection.hostfile), selection.include, selection.exclude,
                         selection.num_nodes, selection.num_gpus)
    sent = {name: value for name, value in job.job_env.items() if name not in _HEAD_ONLY}
    env = {**sent, **remote_env(environ, selection.exports, cwd, Path.home())}
    env = {name: value for name, value in env.items() if name not in _PASSED_AS_FLAGS}
    node_argv = _node_argv_builder(nodes, job, _forwarded(options))
    if selection.runner == "ssh":
        return ssh_commands(nodes, node_argv, env, str(cwd), selection.ssh_port, options=selection.ssh_options)
    builder = {"pdsh": pdsh_command, "openmpi": openmpi_command, "slurm": slurm_command}[selection.runner]
    return builder(nodes, node_argv, env, str(cwd))


def describe_commands(commands: Sequence[LaunchCommand]) -> list[tuple[str, str]]:
    """Plan rows: the exact command each runner process runs, and the environment it is given."""
    rows = []
    for index, command in enumerate(commands):
        label = f"node {index} command" if len(commands) > 1 else "runner command"
        rows.append((label, shlex.join(command.argv)))
        rows.extend((f"runner env {index}", f"{name}={value}") for name, value in command.env.items())
    return rows


def stop_when_stdin_closes() -> None:
    """A node launcher started over ssh: when the head's ssh client goes away, stop this node's ranks."""

    def watch() -> None:
        # os.read on the raw descriptor: a buffered read would hold sys.stdin's lock at interpreter exit.
        while os.read(0, 65536):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="stdin-watch", daemon=True).start()


def _node_argv_builder(nodes: Sequence[NodeSpec], job: JobConfig, forwarded: list[str]):
    endpoint = job.rdzv_endpoint or f"{nodes[0].host}:{job.master_port or DEFAULT_RDZV_PORT}"
    common = [
        sys.executable, "-m", "launcher",
        "--nnodes", str(len(nodes)),
        "--rdzv-endpoint", endpoint,
        "--rdzv-id", job.rdzv_id or uuid.uuid4().hex[:12],
        f"--compile-backend={job.backend.name}",
        f"--compile-backend-source={job.backend.source}",
        *forwarded,
    ]
    prefix = {"script": [], "module": ["-m"], "exec": ["--no-python"]}[job.program.mode]
    program = [*prefix, job.program.target, *job.program.args]

    def node_argv(rank: int | None, node: NodeSpec | None) -> list[str]:
        # Each node finds its rank and devices in the node table the runner sends along (ACCEL_NODE_*).
        if node is None:
            return [*common, *program]
        # ssh: the node launcher stops its ranks when the head's ssh client goes away (its stdin closes).
        return [*common, "--stop-on-stdin-eof", *program]

    return node_argv


def _forwarded(options) -> list[str]:
    """The node-launcher options the head passes on unchanged."""
    args = ["--max-restarts", str(options.max_restarts), "--grace-period", str(options.grace_period),
            "--rdzv-timeout", str(options.rdzv_timeout)]
    if options.accelerator:
        args += ["--accelerator", options.accelerator]
    if options.timeout is not None:
        args += ["--timeout", str(options.timeout)]
    if options.log_dir:
        args += ["--log-dir", options.log_dir]
    return args
