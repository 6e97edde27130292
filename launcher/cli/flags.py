"""The command line's flags (accel-launch's own, torchrun's and DeepSpeed's) as typed values, and the
one launch they ask for: its `LaunchOptions`, or one refusal naming what to use instead (docs/FLAGS.md
has the table of torchrun's and DeepSpeed's).

The flags arrive as click parsed them, packed in three frozen values (`LaunchFlags`, `PeerFlags`,
`HostFlags`). Those declared on a field of LaunchOptions, RunSettings or EngineOptions are built into it by
the field's name (launcher.contract.flag_field), so none can be dropped on the way; the rest are read here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from launcher.cli.peer_flags import REFUSED, PeerFlags
from launcher.contract.engine_options import EngineOptions
from launcher.contract.flag_field import from_flags
from launcher.contract.program import Program
from launcher.contract.run_settings import DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS, RunSettings
from launcher.contract.names import DEFAULT_MASTER_PORT
from launcher.errors import FlagConflictError, RefusedFlagError, UsageError
from launcher.head.runners import REFUSED_RUNNERS
from launcher.head.selection import HostFlags
from launcher.job.local_slots import LOCALHOST, LocalSelection
from launcher.job.options import LaunchOptions

__all__ = ["LaunchFlags", "launch_options", "shutdown_window", "SHUTDOWN_TIMEOUT_VAR"]

# torchrun's shutdown window when --shutdown-timeout is not given (torch/distributed/launcher/api.py).
SHUTDOWN_TIMEOUT_VAR = "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"

_Value = TypeVar("_Value")


@dataclass(frozen=True)
class LaunchFlags:
    """accel-launch's own flags as given, not yet checked: click's values of the options declared on the fields
    of LaunchOptions, RunSettings and EngineOptions (`declared`, by field name), the program, and -v / -q with
    --log_level folded in."""

    program: Program
    declared: Mapping[str, Any]
    verbose: bool = False
    quiet: bool = False


def launch_options(ours: LaunchFlags, peers: PeerFlags, hosts: HostFlags,
                   given: set[str]) -> tuple[LaunchOptions, bool]:
    """The LaunchOptions these flags ask for, and whether this is a hostfile launch through a runner."""
    _refuse(peers, hosts, given)
    engine = from_flags(EngineOptions, ours.declared)
    settings = from_flags(RunSettings, ours.declared, verbose=ours.verbose, quiet=ours.quiet, engine=engine)
    options = from_flags(LaunchOptions, ours.declared, program=ours.program, settings=settings)
    grace_period = _alias(settings.grace_period if "grace_period" in given else None, peers.shutdown_timeout,
                          "grace_period" in given, "--shutdown-timeout", "--grace-period")
    log_dir = _alias(settings.log_dir, peers.each_rank_log, "log_dir" in given, "--enable_each_rank_log", "--log-dir")
    if grace_period is None:
        grace_period = shutdown_window(os.environ)
    if peers.run_path and options.program.mode != "script":
        raise FlagConflictError("--run-path", "it runs a script by path; drop -m/--module and --no-python")
    if engine.standalone:
        options = _standalone(options, given)
    if peers.bind_core_list is not None and not peers.bind_core_list.strip():
        raise UsageError("--bind_core_list", peers.bind_core_list, "give cores like 0-3,8, or drop the flag: "
                         "--bind_cores_to_rank alone shares out every core")
    binding = peers.bind_cores_to_rank or peers.bind_core_list is not None
    options = _with_settings(options, grace_period=float(grace_period), log_dir=log_dir,
                             bind_cores=(peers.bind_core_list or "") if binding else None)
    if hosts.hostfile is not None and peers.no_ssh:
        return _this_node_of_hostfile(options, hosts, given), False
    if hosts.hostfile is not None:
        if "local_addr" in given:
            raise RefusedFlagError("--local-addr with --hostfile", "it names one node's address, and the head "
                                   "starts every node; each node is reached by its hostfile name")
        return options, True
    local = LocalSelection(hosts.include, hosts.exclude, hosts.num_gpus, hosts.num_nodes)
    if local.chooses_slots and "nproc_per_node" in given:
        raise UsageError("--nproc-per-node", options.nproc_per_node, "give it or --num_gpus / --include / "
                         "--exclude, not both")
    return replace(options, local_selection=local if local.chooses_slots else None), False


def _with_settings(options: LaunchOptions, **changes: Any) -> LaunchOptions:
    """`options` with these RunSettings fields changed (checked again as RunSettings is made)."""
    return replace(options, settings=replace(options.settings, **changes))


def _refuse(peers: PeerFlags, hosts: HostFlags, given: set[str]) -> None:
    for name, (flag, why) in REFUSED.items():
        if peers.refused[name] not in (None, False):
            raise RefusedFlagError(flag, why)
    if peers.start_method != "spawn":
        raise RefusedFlagError(f"--start-method {peers.start_method}", "every rank is a fresh interpreter, "
                               "as with spawn; drop the flag (or give spawn)")
    if hosts.runner in REFUSED_RUNNERS:
        raise RefusedFlagError(f"--launcher {hosts.runner}", REFUSED_RUNNERS[hosts.runner])
    runner_flags = (("launcher_args", "--launcher_args"), ("comment", "--comment"), ("account", "--account"),
                    ("venv_script", "--venv_script"))
    if hosts.hostfile is None:
        for name, flag in (("runner", f"--launcher {hosts.runner}"), ("force_multi", "--force_multi"), *runner_flags):
            if name in given:
                raise RefusedFlagError(flag, "it needs --hostfile; without one the job runs on this node only")
    elif peers.no_ssh:
        for name, flag in runner_flags:
            if name in given:
                raise RefusedFlagError(flag, "--no_ssh starts no runner; start each node's launcher your own way")
    else:
        hosts.make_runner().check()


def shutdown_window(environ: Mapping[str, str]) -> int:
    """torchrun's SIGTERM-to-SIGKILL window when no flag sets it: TORCH_ELASTIC_SHUTDOWN_TIMEOUT, else 30 s."""
    text = environ.get(SHUTDOWN_TIMEOUT_VAR)
    if text is None:
        return DEFAULT_GRACE_SECONDS
    if not re.fullmatch(r"[0-9]{1,18}", text.strip()):
        raise UsageError(SHUTDOWN_TIMEOUT_VAR, text,
                         "expected a whole number of seconds (digits 0-9), as torchrun reads it")
    if int(text) > MAX_GRACE_SECONDS:
        raise UsageError(SHUTDOWN_TIMEOUT_VAR, text, f"at most {MAX_GRACE_SECONDS} seconds")
    return int(text)


def _alias(ours: _Value, peers: _Value | None, ours_given: bool, peer_flag: str, our_flag: str) -> _Value:
    """A peer's name for one of our options: its value, unless both are given with different values."""
    if peers is None:
        return ours
    if ours_given and ours != peers:
        raise UsageError(peer_flag, peers, f"{our_flag} {ours} says otherwise; give one of them")
    return peers


def _standalone(options: LaunchOptions, given: set[str]) -> LaunchOptions:
    """torchrun's --standalone: one node, c10d on a free port of this host, a fresh run id."""
    clashing = [flag for name, flag in (("rdzv_endpoint", "--rdzv-endpoint"), ("rdzv_id", "--rdzv-id"),
                                        ("rdzv_backend", "--rdzv-backend"), ("master_port", "--master-port"))
                if name in given]
    if clashing:
        raise FlagConflictError("--standalone", f"it picks its own rendezvous and free port; drop {clashing[0]}")
    if options.nnodes.partition(":")[0].strip() != "1":
        raise UsageError("--nnodes", options.nnodes, "--standalone runs one node; give --nnodes 1 or 1:N, or "
                         "drop --standalone and give --rdzv-endpoint")
    return _with_settings(replace(options, nnodes="1"), rdzv_backend="c10d")


def _this_node_of_hostfile(options: LaunchOptions, hosts: HostFlags, given: set[str]) -> LaunchOptions:
    """DeepSpeed's --no_ssh: this machine is node --node-rank of the hostfile; start only its ranks."""
    nodes = hosts.selected_nodes()
    if options.node_rank is None:
        raise FlagConflictError("--no_ssh", "give --node-rank N: which hostfile node this machine is")
    if not 0 <= options.node_rank < len(nodes):
        raise UsageError("--node-rank", options.node_rank,
                         f"the hostfile selects {len(nodes)} nodes (0-{len(nodes) - 1})")
    node = nodes[options.node_rank]
    settings = options.settings
    options = _with_settings(options, master_addr=settings.master_addr if "master_addr" in given else nodes[0].host,
                             master_port=settings.master_port or DEFAULT_MASTER_PORT)
    return replace(options, nnodes=str(len(nodes)),
                   local_selection=LocalSelection(include=f"{LOCALHOST}:{','.join(map(str, node.slots))}"))
