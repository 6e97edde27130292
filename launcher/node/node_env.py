"""This node's part of every rank's environment, decided where the job is placed on the node
(launcher/node/node_plan.py); the user's own values win.

- Threads: when more than one rank shares the node, OMP_NUM_THREADS (each rank's share of the physical cores) and
  TORCHINDUCTOR_COMPILE_THREADS: under compile once the node's CPUs the launcher may use (one rank compiles a graph
  while the others wait for it), else each rank's share of them.
- Cores: DeepSpeed's `--bind_cores_to_rank` / `--bind_core_list`, the node's cores split evenly among its local
  ranks. The split travels in one variable; each rank pins itself to its share (launcher.rank.bind_cores), the first
  thing the bootstrap does.
- Devices: with --virtual-local-rank, a list of visible devices shorter than the node's ranks is refused.
- NCCL's flight recorder, wired as torch offers it, for a job whose ranks talk over NCCL (cuda, ROCm's RCCL under
  the same name; docs/ACCELERATORS.md): each rank keeps a ring of its last collectives and, when its NCCL watchdog
  times out, dumps it to a file of its own (one per rank, the prefix + its rank), which torch's
  `torch.distributed.flight_recorder` reads. torch's variables are set where they are unset, under either of the
  names torch reads; `--dry-run` shows them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from launcher.contract.names import ACCELERATOR_VAR, CPU_BINDING_VAR
from launcher.errors import UsageError
from launcher.limits import CORES, whole_number
from launcher.rank.bind_cores import core_ranges, parse_binding

__all__ = ["parse_core_list", "split_cores", "binding_env", "core_binding", "check_binding_env", "node_environment", "omp_threads",
           "physical_cores", "COMPILE_THREADS_VAR", "check_virtual_devices", "flight_recorder_environment",
           "TRACE_FILE_PREFIX"]

_FLAG = "--bind_core_list"


def parse_core_list(text: str) -> tuple[int, ...]:
    """`1,3-5,7` -> (1, 3, 4, 5, 7), as DeepSpeed reads it; order kept, duplicates dropped. Every core
    number is checked against the bound before any range is expanded."""
    cores: dict[int, None] = {}  # an ordered set
    named = 0
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        first = whole_number(low, _FLAG, CORES, index=True)
        last = whole_number(high, _FLAG, CORES, index=True) if dash else first
        if last < first:
            raise UsageError(_FLAG, part.strip(), "not a range of core numbers from low to high")
        named += last - first + 1
        if named > CORES.maximum:
            raise UsageError(_FLAG, part.strip(), f"by here the list names more than {CORES.maximum} cores, "
                             "counting repeats")
        cores.update(dict.fromkeys(range(first, last + 1)))
    return tuple(cores)


def split_cores(cores: Sequence[int], nproc: int, available: set[int], given: str = "") -> tuple[tuple[int, ...], ...]:
    """Each local rank's cores: `len(cores) // nproc` consecutive ones each (the rest stay unused).
    `given` is the --bind_core_list text, for the error message."""
    _require_available(cores, available, _FLAG, given or core_ranges(sorted(cores)))
    per_rank = len(cores) // nproc
    if per_rank < 1:
        raise UsageError("--bind_cores_to_rank", f"{len(cores)} cores",
                         f"cannot give each of {nproc} ranks a core; use fewer ranks or more cores")
    return tuple(tuple(cores[rank * per_rank:(rank + 1) * per_rank]) for rank in range(nproc))


def binding_env(shares: Sequence[Sequence[int]], environ: Mapping[str, str]) -> dict[str, str]:
    """The variable carrying every rank's share, and OMP_NUM_THREADS = cores per rank unless already set."""
    env = {CPU_BINDING_VAR: ";".join(",".join(map(str, share)) for share in shares)}
    if "OMP_NUM_THREADS" not in environ:
        env["OMP_NUM_THREADS"] = str(len(shares[0]))
    return env


def core_binding(bind_cores: str | None, nproc: int, environ: Mapping[str, str]) -> dict[str, str]:
    """--bind_cores_to_rank / --bind_core_list (`bind_cores`, None: neither): each local rank's share of the cores."""
    if bind_cores is None:
        return {}
    available = os.sched_getaffinity(0)
    cores = parse_core_list(bind_cores) if bind_cores else tuple(sorted(available))
    return binding_env(split_cores(cores, nproc, available, bind_cores), environ)


def check_binding_env(environ: Mapping[str, str], source: str) -> None:
    """A CPU_BINDING_VAR the ranks would inherit from `source` (the environment or the env file, when no
    binding flag sets it) must be one they can apply here: UsageError naming it otherwise."""
    value = environ.get(CPU_BINDING_VAR)
    if not value:
        return
    where = f"{CPU_BINDING_VAR} in {source}"
    try:
        shares = parse_binding(value, where)
        _require_available([core for share in shares for core in share], os.sched_getaffinity(0), where, value)
    except UsageError as exc:
        raise UsageError(where, value, f"{exc.expected}; leave it unset and give --bind_cores_to_rank "
                         "[--bind_core_list LIST]") from None


def _require_available(cores: Sequence[int], available: set[int], source: str, given: str) -> None:
    missing = sorted(set(cores) - available)
    if missing:
        raise UsageError(source, given, f"core(s) {core_ranges(missing)} are not available to this launcher "
                         f"(available: {core_ranges(sorted(available))})")


# inductor's compile workers; torch's default, min(32, CPUs), in every rank of a node would oversubscribe it.
COMPILE_THREADS_VAR = "TORCHINDUCTOR_COMPILE_THREADS"


def node_environment(
    accelerator: str, nproc_per_node: int, environ: Mapping[str, str], physical_cores: int | None,
    compile_once: bool = False,
) -> dict[str, str]:
    """This node's accelerator, plus, when more than one rank shares the node, OMP_NUM_THREADS (each rank's share of
    the physical cores) and TORCHINDUCTOR_COMPILE_THREADS (with `compile_once`, the CPUs it may use, else each
    rank's share of them), each unless set."""
    env = {ACCELERATOR_VAR: accelerator}
    if "OMP_NUM_THREADS" not in environ and nproc_per_node > 1:
        env["OMP_NUM_THREADS"] = str(omp_threads(physical_cores, nproc_per_node))
    if COMPILE_THREADS_VAR not in environ and nproc_per_node > 1:
        cpus = len(os.sched_getaffinity(0))
        env[COMPILE_THREADS_VAR] = str(cpus if compile_once else max(1, cpus // nproc_per_node))
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


def check_virtual_devices(nproc_per_node: int, visible_devices_env: str | None, environ: Mapping[str, str]) -> None:
    """With --virtual-local-rank, a list of visible devices shorter than the node's ranks is refused before any
    rank starts (torch's agent raises ValueError when the rank past the list starts)."""
    visible = environ.get(visible_devices_env) if visible_devices_env is not None else None
    if visible is not None and len(visible.split(",")) < nproc_per_node:
        raise UsageError(visible_devices_env, visible, f"--virtual-local-rank gives each of the {nproc_per_node} "
                         "ranks of this node one device of this list")


NCCL = "nccl"
TRACE_FILE_PREFIX = "nccl_trace_rank_"  # torch's own default, in its default folder /tmp

# (the variable set, the other names torch reads for the same setting, its value)
_SETTINGS = (
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", ("TORCH_FR_BUFFER_SIZE",), "2000"),
    ("TORCH_NCCL_DUMP_ON_TIMEOUT", (), "1"),
)
_DUMP_FILE = ("TORCH_FR_DUMP_TEMP_FILE", ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE",))


def flight_recorder_environment(communication_backend: str, log_dir: str | None,
                                environ: Mapping[str, str]) -> dict[str, str]:
    """What the ranks of a job on NCCL get beyond `environ` (the user's): the ring's size, the dump on a watchdog
    timeout, and where the dumps go (--log-dir, else the temp dir). Nothing for another communication backend."""
    if communication_backend != NCCL:
        return {}
    folder = os.path.abspath(log_dir) if log_dir else tempfile.gettempdir()
    wanted = (*_SETTINGS, (*_DUMP_FILE, os.path.join(folder, TRACE_FILE_PREFIX)))
    return {name: value for name, others, value in wanted if not any(known in environ for known in (name, *others))}
