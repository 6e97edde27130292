"""The bounds on every count a user can ask for, and the one parser of the whole numbers they give.

Ranks, nodes, devices, cores and slots reach the launcher as flags, hostfile lines, include/exclude
selections, Slurm and OpenMPI variables and the node table. Each is read with `whole_number` against one
`Limit` below, before anything is expanded or started (docs/RELIABILITY.md has the table): ASCII digits
only (not `٣`, `２`, `1_0`, `+1` or ` 1`, which Python's `int()` takes), and never more than the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from launcher.errors import UsageError

__all__ = ["Limit", "CountError", "RANKS_PER_NODE", "NODES", "TOTAL_RANKS", "CORES", "PORTS", "NOT_A_NUMBER", "integer",
           "whole_number", "check_count"]

NOT_A_NUMBER = "expected a whole number written with the digits 0-9"
# Longer digit strings are refused before int() sees them (int() of a huge string is itself slow).
_MAX_DIGITS = 18


@dataclass(frozen=True)
class Limit:
    """At most `maximum` of `what` (e.g. 4096 ranks per node)."""

    maximum: int
    what: str

    def __str__(self) -> str:
        return f"at most {self.maximum} {self.what}"


RANKS_PER_NODE = Limit(4096, "ranks per node")  # also the bound on a device or slot index (below it)
NODES = Limit(65536, "nodes")  # Slurm's own ceiling is 65533 nodes in one job
TOTAL_RANKS = Limit(1 << 20, "ranks in the job")
CORES = Limit(65536, "cores")  # core numbers are below it; Linux builds for at most 8192
PORTS = Limit(65535, "(the highest TCP port)")


class CountError(UsageError, ValueError):
    """A count or index that is not a whole number, or is outside its bound; names where it came from."""


def integer(text: str, source: str, too_long: str = f"has more than {_MAX_DIGITS} digits") -> int:
    """`text` as an int: an optional '-' and 1 to 18 ASCII digits, nothing else (no sign '+', no spaces,
    no '_', no other script's digits); CountError naming `source` otherwise (`too_long` says why a longer
    number is refused)."""
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise CountError(source, _shown(text), NOT_A_NUMBER)
    if len(digits) > _MAX_DIGITS:
        raise CountError(source, _shown(text), too_long)
    return int(text)


def whole_number(text: str, source: str, limit: Limit, minimum: int = 0, index: bool = False) -> int:
    """`text` as an int from `minimum` to `limit` (below it when `index`); CountError naming `source`
    (a flag, a hostfile line, a variable) otherwise."""
    too_long = f"must be below {limit.maximum}" if index else str(limit)
    return check_count(integer(text, source, too_long), source, limit, minimum, index, shown=text)


def check_count(value: int, source: str, limit: Limit, minimum: int = 0, index: bool = False,
                shown: str | None = None) -> int:
    """`value` itself when `minimum <= value <= limit.maximum` (`< maximum` when `index`); CountError otherwise."""
    shown = str(value) if shown is None else shown
    if value < minimum:
        raise CountError(source, _shown(shown), f"must be at least {minimum}")
    if index and value >= limit.maximum:
        raise CountError(source, _shown(shown), f"must be below {limit.maximum}")
    if value > limit.maximum:
        raise CountError(source, _shown(shown), str(limit))
    return value


def _shown(text: str) -> str:
    """`text`, cut to a length that keeps the error one short line."""
    return text if len(text) <= 40 else f"{text[:37]}..."
