"""What every rank is started with: its command (the bootstrap, then the user's program), and the
environment it gets beyond torchrun's own variables (docs/CONTRACT.md section 3).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from launcher.contract.job_config import JobConfig
from launcher.contract.names import ACCELERATOR_VAR

__all__ = ["rank_command", "node_environment", "omp_threads", "physical_cores", "COMPILE_THREADS_VAR"]

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
