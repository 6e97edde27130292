"""DeepSpeed's `--bind_cores_to_rank` / `--bind_core_list`: the node's cores split evenly among its
local ranks, each rank pinned to its share before any user code.

The launcher computes the split and passes it in one variable; each rank applies its own share with
`apply_cpu_binding()`, the first thing the bootstrap does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping, Sequence

from launcher.errors import UsageError

__all__ = ["CPU_BINDING_VAR", "parse_core_list", "split_cores", "binding_env", "check_binding_env", "apply_cpu_binding"]

# Local rank i's cores are the i-th `;`-separated group: `0,1;2,3` pins rank 0 to 0-1 and rank 1 to 2-3.
CPU_BINDING_VAR = "ACCEL_CPU_BINDING"
_FLAG = "--bind_core_list"


def parse_core_list(text: str) -> tuple[int, ...]:
    """`1,3-5,7` -> (1, 3, 4, 5, 7), as DeepSpeed reads it; order kept, duplicates dropped."""
    cores: list[int] = []
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        try:
            span = range(int(low), int(high) + 1) if dash else range(int(low), int(low) + 1)
        except ValueError:
            raise UsageError(_FLAG, text, f"{part.strip()!r} is not a core or a range (e.g. 0-3,8)") from None
        if not span or span.start < 0:
            raise UsageError(_FLAG, text, f"{part.strip()!r} is not a range of core numbers from low to high")
        cores.extend(core for core in span if core not in cores)
    return tuple(cores)


def split_cores(cores: Sequence[int], nproc: int, available: set[int], given: str = "") -> tuple[tuple[int, ...], ...]:
    """Each local rank's cores: `len(cores) // nproc` consecutive ones each (the rest stay unused).
    `given` is the --bind_core_list text, for the error message."""
    missing = sorted(set(cores) - available)
    if missing:
        raise UsageError(_FLAG, given or _ranges(sorted(cores)),
                         f"core(s) {', '.join(map(str, missing))} are not available to this launcher "
                         f"(available: {_ranges(sorted(available))})")
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


def check_binding_env(environ: Mapping[str, str], source: str) -> None:
    """A CPU_BINDING_VAR the ranks would inherit from `source` (the environment or the env file, when no
    binding flag sets it) must be one they can apply here: UsageError otherwise."""
    value = environ.get(CPU_BINDING_VAR)
    if value:
        try:
            _shares(value, os.sched_getaffinity(0))
        except ValueError as exc:
            raise UsageError(f"{CPU_BINDING_VAR} in {source}", value, f"{exc}; leave it unset and give "
                             "--bind_cores_to_rank [--bind_core_list LIST]") from None


def apply_cpu_binding(environ: MutableMapping[str, str] | None = None) -> set[int] | None:
    """In a rank: pin this process to its share of cores (by LOCAL_RANK); None when no binding was asked.
    ValueError (saying why) when the binding cannot be applied here."""
    environ = os.environ if environ is None else environ
    value = environ.get(CPU_BINDING_VAR)
    if not value:
        return None
    available = os.sched_getaffinity(0)
    shares = _shares(value, available)
    local_rank = environ.get("LOCAL_RANK", "0")
    if not (local_rank.isascii() and local_rank.isdigit()):
        raise ValueError(f"LOCAL_RANK={local_rank!r} is not a local rank")
    cores = shares[int(local_rank) % len(shares)]
    os.sched_setaffinity(0, cores)
    return set(cores)


def _shares(value: str, available: set[int]) -> list[set[int]]:
    """`0,1;2,3` -> [{0, 1}, {2, 3}], every core one of `available`; ValueError saying what is wrong."""
    shares = []
    for share in value.split(";"):
        cores = share.split(",")
        if not all(core.isascii() and core.isdigit() and len(core) < 8 for core in cores):
            raise ValueError(f"expected core numbers joined by ',', and ';' between ranks (e.g. 0,1;2,3), "
                             f"got {share!r}")
        missing = sorted({int(core) for core in cores} - available)
        if missing:
            raise ValueError(f"core(s) {', '.join(map(str, missing[:8]))} are not available here "
                             f"(available: {_ranges(sorted(available))})")
        shares.append({int(core) for core in cores})
    return shares


def _ranges(cores: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    parts, start = [], None
    for index, core in enumerate(cores):
        start = core if start is None else start
        if index + 1 == len(cores) or cores[index + 1] != core + 1:
            parts.append(str(core) if start == core else f"{start}-{core}")
            start = None
    return ",".join(parts)
