"""The head of a hostfile launch: one node launcher per selected node, started through a runner.

The head prepares the job once and hands every node the same JobConfig as data (JSON: `launcher.contract.job_json`),
with the layout only the head knows: how many nodes, the rendezvous endpoint and id. Each node checks the
backend against its own accelerator and places the job on itself; each rank still validates it.
"""

from __future__ import annotations

import shlex
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from launcher.contract.hosts import NodeSpec
from launcher.contract.job_config import JobConfig, rank_runs
from launcher.contract.job_json import job_to_json
from launcher.contract.names import (ACCELERATOR_VAR, BACKEND_SOURCE_VAR, BACKEND_VAR, DEFAULT_MASTER_PORT,
                                     NODE_JOB_VAR, STOP_ON_STDIN_EOF)
from launcher.head.remote_env import remote_env
from launcher.head.runners import LaunchCommand
from launcher.head.selection import HostFlags

__all__ = ["hostfile_commands", "sent_env", "node_job", "node_launcher_argv", "describe_commands"]

# Carried inside the job, so a value in the head's own environment must not reach the nodes beside it.
_CARRIED = (BACKEND_VAR, BACKEND_SOURCE_VAR, ACCELERATOR_VAR, NODE_JOB_VAR)


def hostfile_commands(hosts: HostFlags, job: JobConfig, accelerator: str, environ: Mapping[str, str],
                      cwd: Path) -> tuple[LaunchCommand, ...]:
    """The runner processes that start `job` on every node of the hostfile that `hosts` selects (`accelerator`:
    the head's)."""
    nodes = hosts.selected_nodes()
    env = {**sent_env(hosts, accelerator, environ, cwd), NODE_JOB_VAR: job_to_json(node_job(job, nodes))}
    runner = hosts.make_runner()
    # Each node finds its rank and devices in the node table the runner sends along (ACCEL_NODE_*); with one
    # connection per node, it stops its ranks when the head's end of it goes away.
    return runner.commands(nodes, node_launcher_argv(stop_on_stdin_eof=runner.per_node), env, str(cwd))


def sent_env(hosts: HostFlags, accelerator: str, environ: Mapping[str, str], cwd: Path) -> dict[str, str]:
    """The variables every node gets besides the job itself (launcher.head.remote_env; `accelerator`: the
    head's)."""
    sent = remote_env(environ, hosts.exports, cwd, Path.home(), accelerator)
    return {name: value for name, value in sent.items() if name not in _CARRIED}


def node_job(job: JobConfig, nodes: Sequence[NodeSpec]) -> JobConfig:
    """The job every node gets: the head's (prepared, not placed), with the layout of the selected nodes (each
    node's rank and rank count are known before it starts, and the first node hosts the store, unless the user
    named an endpoint); each node places it on itself."""
    known = not job.rdzv_endpoint and len(nodes) > 1
    endpoint = job.rdzv_endpoint or f"{nodes[0].host}:{job.settings.master_port or DEFAULT_MASTER_PORT}"
    return replace(job, nnodes=str(len(nodes)), rdzv_endpoint=endpoint, rdzv_id=job.rdzv_id or uuid.uuid4().hex[:12],
                   node_rank_known=known, rank_counts=rank_runs(len(node.slots) for node in nodes) if known else ())


def node_launcher_argv(stop_on_stdin_eof: bool) -> list[str]:
    """The command a node runs; `stop_on_stdin_eof`: it stops its ranks when its stdin (the head's connection)
    closes."""
    return [sys.executable, "-m", "launcher.node", *([STOP_ON_STDIN_EOF] if stop_on_stdin_eof else [])]


def describe_commands(commands: Sequence[LaunchCommand], sent: Sequence[str],
                      secrets: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Plan rows: the names of the variables `sent` to every node (not their values), the exact command each
    runner process runs, and the environment it is given, each of `secrets` shown as `<secret>`."""

    def shown(text: str) -> str:
        for secret in secrets:
            text = text.replace(secret, "<secret>")
        return text

    rows = [("sent to nodes", ", ".join(sent) or "(nothing but the job)")]
    for index, command in enumerate(commands):
        label = f"node {index} command" if len(commands) > 1 else "runner command"
        rows.append((label, shown(shlex.join(command.argv))))
        rows.extend((f"runner env {index}", shown(f"{name}={value}")) for name, value in command.env.items())
    return rows
