"""What the launcher needs to know about this node's accelerator, gathered in one place.

The launcher never needs an Accelerator object of its own: only these facts, so that how they are
obtained (and cached) can change behind one function. Where it can be done soundly they are obtained
without importing torch: the accelerator is decided from torch's files when they rule every device out
(`find_accelerator`), and the backend list comes from a cache keyed by what is installed (`facts_cache`).
Otherwise torch decides, as it does in every rank, whose check stays authoritative.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from accelerators.detect import find_accelerator
from accelerators.torch_build import torch_build
from launcher.rank import node_facts_cache as facts_cache

__all__ = ["AcceleratorFacts", "accelerator_facts"]


@dataclass(frozen=True)
class AcceleratorFacts:
    """The accelerator a launch here would use, and what it accepts."""

    name: str
    detected_by: str
    device_count: int
    communication_backend: str
    max_ranks_per_node: int | None
    default_nproc: int
    default_backend: str
    supported_backends: tuple[str, ...]


def accelerator_facts(environ: Mapping[str, str]) -> AcceleratorFacts:
    """Detect the accelerator for `environ` (ACCEL_ACCELERATOR included) and list its backends."""
    accelerator_cls, detected_by = find_accelerator(environ)
    accelerator = accelerator_cls()
    return AcceleratorFacts(
        name=accelerator.name,
        detected_by=detected_by,
        device_count=accelerator_cls.device_count(),
        communication_backend=accelerator.communication_backend_name(),
        max_ranks_per_node=accelerator_cls.max_ranks_per_node(),
        default_nproc=accelerator_cls.default_nproc(),
        default_backend=str(accelerator.get_compile_backend()),
        supported_backends=facts_cache.backends_for(accelerator, torch_build(), environ),
    )

