"""What every rank is started with, on both launch paths: its command (the bootstrap, then the user's program),
the environment it gets beyond torchrun's own variables (docs/CONTRACT.md section 3), and torch elastic's worker
variables, as torchrun 2.13 gives them
(torch/distributed/elastic/agent/server/local_elastic_agent.py, `_start_workers` and `_set_local_rank_env`).

The direct path places each rank from its node plan (launcher/run/direct/direct_run.py); the engine path from the
worker group torch's rendezvous formed (launcher/run/rank_agent.py). Either way `worker_env` writes the variables
over the environment the plan holds for every rank.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from launcher.contract.job_config import JobConfig
from launcher.contract.names import ACCELERATOR_VAR
from launcher.errors import UsageError

__all__ = ["RankPlace", "worker_env", "check_virtual_devices", "SIGNALS_VAR", "rank_command",
           "node_environment", "omp_threads", "physical_cores", "COMPILE_THREADS_VAR"]

# torch's launch_agent puts --signals-to-handle in its own environment, so every rank inherits it.
SIGNALS_VAR = "TORCHELASTIC_SIGNALS_TO_HANDLE"


@dataclass(frozen=True)
class RankPlace:
    """Where one rank stands in the job: what torch elastic tells a worker."""

    local_rank: int
    rank: int
    role: str
    role_rank: int
    group_rank: int
    local_world_size: int
    world_size: int
    group_world_size: int
    role_world_size: int
    master: tuple[str, int]
    run_id: str
    restart_count: int = 0
    max_restarts: int = 0
    use_agent_store: bool = True
    virtual_local_rank: bool = False
    visible_devices_env: str | None = None  # the job's accelerator's (accelerators/)


def worker_env(place: RankPlace, environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with torch elastic's variables for the rank at `place` (its error file is added where its logs
    are made)."""
    return {
        **environ,
        "RANK": str(place.rank),
        "GROUP_RANK": str(place.group_rank),
        "ROLE_RANK": str(place.role_rank),
        "ROLE_NAME": place.role,
        "LOCAL_WORLD_SIZE": str(place.local_world_size),
        "WORLD_SIZE": str(place.world_size),
        "GROUP_WORLD_SIZE": str(place.group_world_size),
        "ROLE_WORLD_SIZE": str(place.role_world_size),
        "MASTER_ADDR": place.master[0],
        "MASTER_PORT": str(place.master[1]),
        "TORCHELASTIC_RESTART_COUNT": str(place.restart_count),
        "TORCHELASTIC_MAX_RESTARTS": str(place.max_restarts),
        "TORCHELASTIC_RUN_ID": place.run_id,
        "TORCHELASTIC_USE_AGENT_STORE": str(place.use_agent_store),
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
        **_local_device(place, environ),
    }


def _local_device(place: RankPlace, environ: Mapping[str, str]) -> dict[str, str]:
    """LOCAL_RANK, and with --virtual-local-rank the one device the rank sees as device 0: torch's rule
    (`_set_local_rank_env`), the rank's entry of the launcher's list of visible devices, else its local rank, in
    the variable of the job's accelerator (torch's rule writes CUDA's on every device; a CPU job has none)."""
    if not place.virtual_local_rank:
        return {"LOCAL_RANK": str(place.local_rank)}
    name = place.visible_devices_env
    if name is None:
        return {"LOCAL_RANK": "0"}
    visible = environ.get(name)
    device = visible.split(",")[place.local_rank].strip() if visible is not None else str(place.local_rank)
    return {"LOCAL_RANK": "0", name: device}


def check_virtual_devices(nproc_per_node: int, visible_devices_env: str | None, environ: Mapping[str, str]) -> None:
    """With --virtual-local-rank, a list of visible devices shorter than the node's ranks is refused before any
    rank starts (torch's agent raises ValueError when the rank past the list starts)."""
    visible = environ.get(visible_devices_env) if visible_devices_env is not None else None
    if visible is not None and len(visible.split(",")) < nproc_per_node:
        raise UsageError(visible_devices_env, visible, f"--virtual-local-rank gives each of the {nproc_per_node} "
                         "ranks of this node one device of this list")


# inductor's compile workers; torch's default, min(32, CPUs), in every rank of a node would oversubscribe it.
COMPILE_THREADS_VAR = "TORCHINDUCTOR_COMPILE_THREADS"


def rank_command(config: JobConfig) -> list[str]:
    """The argv each rank runs: the bootstrap (`-P`: not found in the user's folder), then the user's program."""
    program = config.program
    return [sys.executable, "-P", "-m", "launcher.rank.bootstrap", program.mode, program.target, *program.args]


def node_environment(
    accelerator: str, nproc_per_node: int, environ: Mapping[str, str], physical_cores: int | None
) -> dict[str, str]:
    """This node's accelerator, plus, when more than one rank shares the node, OMP_NUM_THREADS (each rank's share of
    the physical cores) and TORCHINDUCTOR_COMPILE_THREADS (its share of the CPUs it may use), each unless set."""
    env = {ACCELERATOR_VAR: accelerator}
    if "OMP_NUM_THREADS" not in environ and nproc_per_node > 1:
        env["OMP_NUM_THREADS"] = str(omp_threads(physical_cores, nproc_per_node))
    if COMPILE_THREADS_VAR not in environ and nproc_per_node > 1:
        env[COMPILE_THREADS_VAR] = str(max(1, len(os.sched_getaffinity(0)) // nproc_per_node))
    return env


def omp_threads(physical_cores: int | None, local_ranks: int) -> int:
    """Physical cores shared out among the node's ranks, at least one each."""
    return max(1, (physical_cores or 1) // max(1, local_ranks))


def physical_cores() -> int | None:
    """The machine's physical cores: distinct (package, core) pairs in Linux's sysfs, as psutil counts them,
    without importing psutil on the launch path; psutil's answer elsewhere."""
    cores = set()
    for topology in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology"):
        try:
            cores.add(((topology / "physical_package_id").read_text(), (topology / "core_id").read_text()))
        except OSError:
            continue
    if cores:
        return len(cores)
    import psutil

    return psutil.cpu_count(logical=False)
