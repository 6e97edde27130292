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

from accelerators import Accelerator
from accelerators.detect import find_accelerator
from accelerators.torch_build import torch_build
from launcher.rank import node_facts_cache as facts_cache

__all__ = ["AcceleratorFacts", "accelerator_facts"]


@dataclass(frozen=True)
class AcceleratorFacts:
    """The accelerator a launch here would use (its class says what it is), how it was chosen, what this node
    has of it (probed once), and the compile backends it accepts."""

    device: type[Accelerator]
    detected_by: str
    device_count: int
    max_ranks_per_node: int | None
    default_nproc: int
    supported_backends: tuple[str, ...]

    @property
    def name(self) -> str:
        """The accelerator's name, e.g. 'cuda'."""
        return self.device.name

    @property
    def default_backend(self) -> str:
        """Its default compile backend."""
        return self.device.default_compile_backend

    @property
    def communication_backend(self) -> str:
        """Its torch.distributed backend, e.g. 'nccl'."""
        return self.device.communication_backend


def accelerator_facts(environ: Mapping[str, str]) -> AcceleratorFacts:
    """Detect the accelerator for `environ` (ACCEL_ACCELERATOR included) and list its backends."""
    device, detected_by = find_accelerator(environ)
    return AcceleratorFacts(
        device=device,
        detected_by=detected_by,
        device_count=device.device_count(),
        max_ranks_per_node=device.max_ranks_per_node(),
        default_nproc=device.default_nproc(),
        supported_backends=facts_cache.backends_for(device(), torch_build(), environ),
    )

