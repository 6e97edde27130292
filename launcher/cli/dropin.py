"""torchrun's and DeepSpeed's flags turned into one launch: the values `LaunchOptions` takes, or one
refusal naming what to use instead (docs/FLAGS.md has the table).
"""

from __future__ import annotations

from collections.abc import Mapping

from launcher.cli.peer_flags import REFUSED
from launcher.contract.engine_options import EngineOptions, parse_ranks_filter
from launcher.contract.names import DEFAULT_MASTER_PORT
from launcher.contract.rdzv_conf import parse_rdzv_conf
from launcher.errors import FlagConflictError, RefusedFlagError, UsageError
from launcher.multinode.head.selection import HostFlags
from launcher.prepare.local_slots import LOCALHOST, LocalSelection

__all__ = ["translate", "MPI_RUNNERS", "ETCD_BACKENDS"]

# DeepSpeed's MPI runners that we do not drive; openmpi and slurm we do.
MPI_RUNNERS = ("mvapich", "impi", "mpich")
# torchrun's etcd rendezvous backends, which need an etcd server and its client package.
ETCD_BACKENDS = ("etcd", "etcd-v2")


def translate(peers: Mapping[str, object], options: Mapping[str, object], hosts: HostFlags, mode: str,
              given: set[str]) -> tuple[dict[str, object], bool]:
    """The LaunchOptions values for these flags, and whether this is a hostfile launch through a runner."""
    _refuse(peers, hosts, given)
    if options["rdzv_backend"] in ETCD_BACKENDS:
        raise RefusedFlagError(f"--rdzv-backend {options['rdzv_backend']}", "use c10d (the default), which needs "
                               "no etcd server: --rdzv-endpoint HOST:PORT on every node")
    values = dict(options)
    _alias(values, peers, given, "shutdown_timeout", "grace_period", "--shutdown-timeout", "--grace-period")
    _alias(values, peers, given, "each_rank_log", "log_dir", "--enable_each_rank_log", "--log-dir")
    if peers["run_path"] and mode != "script":
        raise FlagConflictError("--run-path", "it runs a script by path; drop -m/--module and --no-python")
    values["engine"] = _engine(peers)
    if peers["standalone"]:
        _standalone(values, given)
    if peers["bind_core_list"] is not None and not str(peers["bind_core_list"]).strip():
        raise UsageError("--bind_core_list", peers["bind_core_list"], "give cores like 0-3,8, or drop the flag: "
                         "--bind_cores_to_rank alone shares out every core")
    if peers["bind_cores_to_rank"] or peers["bind_core_list"] is not None:
        values["bind_cores"] = peers["bind_core_list"] or ""
    if hosts.hostfile is not None and peers["no_ssh"]:
        _this_node_of_hostfile(values, hosts, given)
        return values, False
    if hosts.hostfile is not None:
        if "local_addr" in given:
            raise RefusedFlagError("--local-addr with --hostfile", "it names one node's address, and the head "
                                   "starts every node; each node is reached by its hostfile name")
        return values, True
    selection = LocalSelection(hosts.include, hosts.exclude, hosts.num_gpus, hosts.num_nodes)
    if selection.chooses_slots:
        if "nproc_per_node" in given:
            raise UsageError("--nproc-per-node", values["nproc_per_node"],
                             "give it or --num_gpus / --include / --exclude, not both")
        values["local_selection"] = selection
    return values, False


def _refuse(peers: Mapping[str, object], hosts: HostFlags, given: set[str]) -> None:
    for name, (flag, why) in REFUSED.items():
        if peers[name] not in (None, False):
            raise RefusedFlagError(flag, why)
    if peers["start_method"] != "spawn":
        raise RefusedFlagError(f"--start-method {peers['start_method']}", "every rank is a fresh interpreter, "
                               "as with spawn; drop the flag (or give spawn)")
    if hosts.runner in MPI_RUNNERS:
        raise RefusedFlagError(f"--launcher {hosts.runner}", "use --launcher openmpi (one mpirun) or slurm (one "
                               "srun step), or start accel-launch under your own mpirun, one per node")
    if hosts.hostfile is None:
        for name, flag in (("runner", f"--launcher {hosts.runner}"), ("force_multi", "--force_multi")):
            if name in given:
                raise RefusedFlagError(flag, "it needs --hostfile; without one the job runs on this node only")


def _alias(values: dict[str, object], peers: Mapping[str, object], given: set[str], peer: str, ours: str,
           peer_flag: str, our_flag: str) -> None:
    """A peer's name for one of our options: its value, unless both are given with different values."""
    if peers[peer] is None:
        return
    if ours in given and values[ours] != peers[peer]:
        raise UsageError(peer_flag, peers[peer], f"{our_flag} {values[ours]} says otherwise; give one of them")
    values[ours] = float(peers[peer]) if ours == "grace_period" else peers[peer]


def _engine(peers: Mapping[str, object]) -> EngineOptions:
    def listed(name: str) -> tuple[str, ...]:
        return tuple(part for part in str(peers[name]).split(",") if part)

    return EngineOptions(
        role=str(peers["role"]),
        rdzv_conf=parse_rdzv_conf(str(peers["rdzv_conf"])),
        standalone=bool(peers["standalone"]),
        local_addr=peers["local_addr"],  # type: ignore[arg-type]
        monitor_interval=float(peers["monitor_interval"]),  # type: ignore[arg-type]
        redirects=str(peers["redirects"]),
        tee=str(peers["tee"]),
        local_ranks_filter=parse_ranks_filter(str(peers["local_ranks_filter"])) if peers["local_ranks_filter"] else (),
        event_log_handler=str(peers["event_log_handler"]),
        signals_to_handle=str(peers["signals_to_handle"]),
        duplicate_stdout_filters=listed("duplicate_stdout_filters"),
        duplicate_stderr_filters=listed("duplicate_stderr_filters"),
        virtual_local_rank=bool(peers["virtual_local_rank"]),
    )


def _standalone(values: dict[str, object], given: set[str]) -> None:
    """torchrun's --standalone: one node, c10d on a free port of this host, a fresh run id."""
    clashing = [flag for name, flag in (("rdzv_endpoint", "--rdzv-endpoint"), ("rdzv_id", "--rdzv-id"),
                                        ("rdzv_backend", "--rdzv-backend"), ("master_port", "--master-port"))
                if name in given]
    if clashing:
        raise FlagConflictError("--standalone", f"it picks its own rendezvous and free port; drop {clashing[0]}")
    low = str(values["nnodes"]).partition(":")[0]
    if low.strip() != "1":
        raise UsageError("--nnodes", values["nnodes"], "--standalone runs one node; give --nnodes 1 or 1:N, or "
                         "drop --standalone and give --rdzv-endpoint")
    values.update(nnodes="1", rdzv_backend="c10d")


def _this_node_of_hostfile(values: dict[str, object], hosts: HostFlags, given: set[str]) -> None:
    """DeepSpeed's --no_ssh: this machine is node --node-rank of the hostfile; start only its ranks."""
    nodes = hosts.selected_nodes()
    rank = values.get("node_rank")
    if rank is None:
        raise FlagConflictError("--no_ssh", "give --node-rank N: which hostfile node this machine is")
    if not 0 <= int(rank) < len(nodes):  # type: ignore[arg-type]
        raise UsageError("--node-rank", rank, f"the hostfile selects {len(nodes)} nodes (0-{len(nodes) - 1})")
    node = nodes[int(rank)]  # type: ignore[arg-type]
    values.update(nnodes=str(len(nodes)),
                  master_addr=values["master_addr"] if "master_addr" in given else nodes[0].host,
                  master_port=values["master_port"] or DEFAULT_MASTER_PORT,
                  local_selection=LocalSelection(include=f"{LOCALHOST}:{','.join(map(str, node.slots))}"))
