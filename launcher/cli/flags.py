"""The command line's flags (accel-launch's own, torchrun's and DeepSpeed's) as typed values, and the
one launch they ask for: its `LaunchOptions`, or one refusal naming what to use instead (docs/FLAGS.md
has the table of torchrun's and DeepSpeed's).

The flags arrive as click parsed them, packed in three frozen values (`LaunchFlags`, `PeerFlags`,
`HostFlags`), and leave as `LaunchOptions` built field by field: a name misspelt on either side fails
every launch, never a value silently dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from difflib import get_close_matches
from importlib.util import find_spec
from typing import TypeVar

from launcher.cli.peer_flags import REFUSED
from launcher.errors import FlagConflictError, RefusedFlagError, UsageError
from launcher.multinode.head.selection import HostFlags
from launcher.contract.engine_options import EngineOptions, parse_ranks_filter
from launcher.contract.engine_options import HANDLERS_GROUP, entry_point_names
from launcher.contract.job_config import Program, RunSettings
from launcher.contract.names import DEFAULT_MASTER_PORT
from launcher.contract.rdzv_conf import parse_rdzv_conf
from launcher.prepare.local_slots import LOCALHOST, LocalSelection
from launcher.prepare.options import LaunchOptions
from launcher.prepare.validate import MAX_GRACE_SECONDS

__all__ = ["LaunchFlags", "PeerFlags", "launch_options", "shutdown_window", "MPI_RUNNERS", "ETCD_BACKENDS",
           "SHUTDOWN_TIMEOUT_VAR"]

# DeepSpeed's MPI runners that we do not drive; openmpi and slurm we do.
MPI_RUNNERS = ("mvapich", "impi", "mpich")
# torchrun's etcd rendezvous backends, which need an etcd server and its client package.
ETCD_BACKENDS = ("etcd", "etcd-v2")
# torchrun's shutdown window when --shutdown-timeout is not given (torch/distributed/launcher/api.py).
SHUTDOWN_TIMEOUT_VAR = "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"
DEFAULT_SHUTDOWN_SECONDS = 30

_Value = TypeVar("_Value")


@dataclass(frozen=True)
class LaunchFlags:
    """accel-launch's own flags as given, not yet checked (verbose and quiet with --log_level folded in)."""

    program: Program
    compile_backend: str | None
    accelerator: str | None
    ds_config: str | None
    nproc_per_node: str
    nnodes: str
    node_rank: int | None
    master_addr: str
    master_port: int | None
    rdzv_backend: str
    rdzv_endpoint: str
    rdzv_id: str
    rdzv_timeout: int
    max_restarts: int
    env_file: str | None
    log_dir: str | None
    grace_period: float | None  # None: not given (torchrun's default window applies)
    timeout: float | None
    verbose: bool
    quiet: bool


@dataclass(frozen=True)
class PeerFlags:
    """torchrun's and DeepSpeed's flags as given (launcher.cli.peer_flags declares them); the refused ones
    by parameter name in `refused`."""

    standalone: bool
    rdzv_conf: str
    monitor_interval: float
    start_method: str
    event_log_handler: str
    role: str
    run_path: bool
    redirects: str
    tee: str
    local_ranks_filter: str
    duplicate_stdout_filters: str
    duplicate_stderr_filters: str
    local_addr: str | None
    signals_to_handle: str
    shutdown_timeout: int | None
    virtual_local_rank: bool
    logs_specs: str
    no_local_rank: bool
    no_ssh_check: bool
    no_ssh: bool
    force_multi: bool
    each_rank_log: str | None
    bind_cores_to_rank: bool
    bind_core_list: str | None
    save_pid: bool
    refused: dict[str, object]


def launch_options(ours: LaunchFlags, peers: PeerFlags, hosts: HostFlags,
                   given: set[str]) -> tuple[LaunchOptions, bool]:
    """The LaunchOptions these flags ask for, and whether this is a hostfile launch through a runner."""
    _refuse(peers, hosts, given)
    _check_rdzv_backend(ours.rdzv_backend)
    grace_period = _alias(ours.grace_period, peers.shutdown_timeout, "grace_period" in given, "--shutdown-timeout",
                          "--grace-period")
    log_dir = _alias(ours.log_dir, peers.each_rank_log, "log_dir" in given, "--enable_each_rank_log", "--log-dir")
    if grace_period is None:
        grace_period = shutdown_window(os.environ)
    ours = replace(ours, grace_period=float(grace_period), log_dir=log_dir)
    if peers.run_path and ours.program.mode != "script":
        raise FlagConflictError("--run-path", "it runs a script by path; drop -m/--module and --no-python")
    engine = _engine(peers)
    if peers.standalone:
        ours = _standalone(ours, given)
    if peers.bind_core_list is not None and not peers.bind_core_list.strip():
        raise UsageError("--bind_core_list", peers.bind_core_list, "give cores like 0-3,8, or drop the flag: "
                         "--bind_cores_to_rank alone shares out every core")
    binding = peers.bind_cores_to_rank or peers.bind_core_list is not None
    bind_cores = (peers.bind_core_list or "") if binding else None
    if hosts.hostfile is not None and peers.no_ssh:
        ours, selection = _this_node_of_hostfile(ours, hosts, given)
        return _options(ours, engine, bind_cores, selection), False
    if hosts.hostfile is not None:
        if "local_addr" in given:
            raise RefusedFlagError("--local-addr with --hostfile", "it names one node's address, and the head "
                                   "starts every node; each node is reached by its hostfile name")
        return _options(ours, engine, bind_cores, None), True
    local = LocalSelection(hosts.include, hosts.exclude, hosts.num_gpus, hosts.num_nodes)
    if local.chooses_slots and "nproc_per_node" in given:
        raise UsageError("--nproc-per-node", ours.nproc_per_node, "give it or --num_gpus / --include / --exclude, "
                         "not both")
    return _options(ours, engine, bind_cores, local if local.chooses_slots else None), False


def _options(ours: LaunchFlags, engine: EngineOptions, bind_cores: str | None,
             local_selection: LocalSelection | None) -> LaunchOptions:
    """The flags as LaunchOptions: the engine's settings carried whole in RunSettings."""
    settings = RunSettings(master_addr=ours.master_addr, master_port=ours.master_port, rdzv_backend=ours.rdzv_backend,
                           rdzv_timeout=ours.rdzv_timeout, max_restarts=ours.max_restarts,
                           grace_period=ours.grace_period, timeout=ours.timeout, log_dir=ours.log_dir,
                           bind_cores=bind_cores, verbose=ours.verbose, quiet=ours.quiet, engine=engine)
    return LaunchOptions(program=ours.program, settings=settings, compile_backend=ours.compile_backend,
                         accelerator=ours.accelerator, ds_config=ours.ds_config, nproc_per_node=ours.nproc_per_node,
                         nnodes=ours.nnodes, node_rank=ours.node_rank, rdzv_endpoint=ours.rdzv_endpoint,
                         rdzv_id=ours.rdzv_id, env_file=ours.env_file, local_selection=local_selection)


def _refuse(peers: PeerFlags, hosts: HostFlags, given: set[str]) -> None:
    for name, (flag, why) in REFUSED.items():
        if peers.refused[name] not in (None, False):
            raise RefusedFlagError(flag, why)
    if peers.start_method != "spawn":
        raise RefusedFlagError(f"--start-method {peers.start_method}", "every rank is a fresh interpreter, "
                               "as with spawn; drop the flag (or give spawn)")
    if hosts.runner in MPI_RUNNERS:
        raise RefusedFlagError(f"--launcher {hosts.runner}", "use --launcher openmpi (one mpirun) or slurm (one "
                               "srun step), or start accel-launch under your own mpirun, one per node")
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
        hosts.runner_options().check(hosts.runner)


def _check_rdzv_backend(name: str) -> None:
    """A handler of torch's rendezvous registry: its own four (etcd only with its client package installed) and
    those of torch's `torchrun.handlers` entry points."""
    if name in ETCD_BACKENDS and find_spec("etcd") is None:
        raise RefusedFlagError(f"--rdzv-backend {name}", "it needs an etcd server and the python-etcd package, "
                               "which is not installed; use c10d (the default): --rdzv-endpoint HOST:PORT on "
                               "every node")
    known = ("c10d", "static", *ETCD_BACKENDS, *entry_point_names(HANDLERS_GROUP))
    if name not in known:
        close = get_close_matches(name, known, n=1)
        raise UsageError("--rdzv-backend", name, f"expected one of torch's rendezvous handlers: {', '.join(known)}"
                         + (f"; did you mean {close[0]!r}?" if close else ""))


def shutdown_window(environ: Mapping[str, str]) -> int:
    """torchrun's SIGTERM-to-SIGKILL window when no flag sets it: TORCH_ELASTIC_SHUTDOWN_TIMEOUT, else 30 s."""
    text = environ.get(SHUTDOWN_TIMEOUT_VAR)
    if text is None:
        return DEFAULT_SHUTDOWN_SECONDS
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


def _engine(peers: PeerFlags) -> EngineOptions:
    def listed(text: str) -> tuple[str, ...]:
        return tuple(part for part in text.split(",") if part)

    return EngineOptions(
        role=peers.role,
        rdzv_conf=parse_rdzv_conf(peers.rdzv_conf),
        standalone=peers.standalone,
        local_addr=peers.local_addr,
        monitor_interval=peers.monitor_interval,
        redirects=peers.redirects,
        tee=peers.tee,
        local_ranks_filter=parse_ranks_filter(peers.local_ranks_filter) if peers.local_ranks_filter else (),
        event_log_handler=peers.event_log_handler,
        signals_to_handle=peers.signals_to_handle,
        duplicate_stdout_filters=listed(peers.duplicate_stdout_filters),
        duplicate_stderr_filters=listed(peers.duplicate_stderr_filters),
        virtual_local_rank=peers.virtual_local_rank,
        logs_specs=peers.logs_specs,
    )


def _standalone(ours: LaunchFlags, given: set[str]) -> LaunchFlags:
    """torchrun's --standalone: one node, c10d on a free port of this host, a fresh run id."""
    clashing = [flag for name, flag in (("rdzv_endpoint", "--rdzv-endpoint"), ("rdzv_id", "--rdzv-id"),
                                        ("rdzv_backend", "--rdzv-backend"), ("master_port", "--master-port"))
                if name in given]
    if clashing:
        raise FlagConflictError("--standalone", f"it picks its own rendezvous and free port; drop {clashing[0]}")
    if ours.nnodes.partition(":")[0].strip() != "1":
        raise UsageError("--nnodes", ours.nnodes, "--standalone runs one node; give --nnodes 1 or 1:N, or "
                         "drop --standalone and give --rdzv-endpoint")
    return replace(ours, nnodes="1", rdzv_backend="c10d")


def _this_node_of_hostfile(ours: LaunchFlags, hosts: HostFlags, given: set[str]) -> tuple[LaunchFlags, LocalSelection]:
    """DeepSpeed's --no_ssh: this machine is node --node-rank of the hostfile; start only its ranks."""
    nodes = hosts.selected_nodes()
    if ours.node_rank is None:
        raise FlagConflictError("--no_ssh", "give --node-rank N: which hostfile node this machine is")
    if not 0 <= ours.node_rank < len(nodes):
        raise UsageError("--node-rank", ours.node_rank, f"the hostfile selects {len(nodes)} nodes (0-{len(nodes) - 1})")
    node = nodes[ours.node_rank]
    ours = replace(ours, nnodes=str(len(nodes)),
                   master_addr=ours.master_addr if "master_addr" in given else nodes[0].host,
                   master_port=ours.master_port or DEFAULT_MASTER_PORT)
    return ours, LocalSelection(include=f"{LOCALHOST}:{','.join(map(str, node.slots))}")
