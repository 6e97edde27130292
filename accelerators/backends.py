"""The one module that talks to dynamo's backend registry; torch._dynamo is imported only when called."""

from __future__ import annotations

import logging

from accelerators.backend_requirements import is_excluded, requirement_problem

log = logging.getLogger(__name__)


def registered_backends() -> tuple[str, ...]:
    """Walk dynamo's live registry (entry-point backends included), minus testing-only and minifier ones."""
    from torch._dynamo import list_backends

    return tuple(name for name in list_backends(exclude_tags=()) if not is_excluded(name))


def runnable_backends(device: str) -> tuple[str, ...]:
    """The registered backends that `device` can run, sorted; walks the registry once."""
    names = sorted(name for name in registered_backends() if requirement_problem(name, device) is None)
    log.debug("compile backends runnable on %s: %s", device, names)
    return tuple(names)
