"""The names registered in an entry-point group of the installed packages (torch's `torchrun.logs_specs` and
`torchrun.handlers`), read from the packages' metadata without importing any of them."""

from __future__ import annotations

import functools
from importlib.metadata import entry_points

__all__ = ["entry_point_names", "LOGS_SPECS_GROUP", "HANDLERS_GROUP"]

LOGS_SPECS_GROUP = "torchrun.logs_specs"
HANDLERS_GROUP = "torchrun.handlers"


@functools.cache
def entry_point_names(group: str) -> tuple[str, ...]:
    """The sorted names of `group`'s entry points (none: an empty tuple)."""
    return tuple(sorted({point.name for point in entry_points(group=group)}))
