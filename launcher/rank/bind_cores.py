"""A rank's side of the CPU binding: its share of the cores the launcher split (launcher.node.core_split),
read from one variable and applied to this process before any user code.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from launcher.contract.names import CPU_BINDING_VAR
from launcher.limits import CORES, RANKS_PER_NODE, CountError, whole_number

__all__ = ["parse_binding", "apply_cpu_binding", "core_ranges"]


def parse_binding(value: str, source: str = CPU_BINDING_VAR) -> tuple[tuple[int, ...], ...]:
    """The shares the launcher wrote (`0,1;2,3`): CountError naming `source` for anything else, such as a
    value a user set by hand."""
    shares = value.split(";")
    if len(shares) > RANKS_PER_NODE.maximum:
        raise CountError(source, f"{len(shares)} shares", str(RANKS_PER_NODE))
    return tuple(tuple(whole_number(core, source, CORES, index=True) for core in share.split(","))
                 for share in shares)


def apply_cpu_binding(environ: MutableMapping[str, str] | None = None) -> set[int] | None:
    """In a rank: pin this process to its share of cores (by LOCAL_RANK); None when no binding was asked.
    ValueError (one line) when the variable is malformed or names cores this process cannot have."""
    environ = os.environ if environ is None else environ
    value = environ.get(CPU_BINDING_VAR)
    if not value:
        return None
    shares = parse_binding(value)
    local_rank = environ.get("LOCAL_RANK", "0")
    if not (local_rank.isascii() and local_rank.isdigit()):
        raise ValueError(f"LOCAL_RANK={local_rank!r} is not a local rank")
    cores = set(shares[int(local_rank) % len(shares)])
    try:
        os.sched_setaffinity(0, cores)
    except OSError as exc:
        raise ValueError(f"{CPU_BINDING_VAR}: cannot pin this rank to cores {core_ranges(sorted(cores))} "
                         f"({exc.strerror or exc})") from None
    return cores


def core_ranges(cores: list[int]) -> str:
    """Core numbers as ranges, as `--bind_core_list` takes them: [0, 1, 2, 5] -> '0-2,5'."""
    parts, start = [], None
    for index, core in enumerate(cores):
        start = core if start is None else start
        if index + 1 == len(cores) or cores[index + 1] != core + 1:
            parts.append(str(core) if start == core else f"{start}-{core}")
            start = None
    return ",".join(parts)
