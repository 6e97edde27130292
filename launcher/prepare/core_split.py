"""DeepSpeed's `--bind_cores_to_rank` / `--bind_core_list`: the node's cores split evenly among its
local ranks, each rank pinned to its share before any user code.

The launcher computes the split here and passes it in one variable; each rank applies its own share
(launcher.rank.bind_cores), the first thing the bootstrap does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from launcher.contract.names import CPU_BINDING_VAR
from launcher.errors import UsageError
from launcher.limits import CORES, whole_number
from launcher.rank.bind_cores import core_ranges, parse_binding

__all__ = ["parse_core_list", "split_cores", "binding_env", "check_binding_env"]

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
