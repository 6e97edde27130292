"""The known accelerators, in detection order. Adding one is one file and one line in ACCELERATORS."""

from __future__ import annotations

from accelerators.abstract import Accelerator
from accelerators.cpu import CPUAccelerator
from accelerators.cuda import CUDAAccelerator
from accelerators.errors import UnknownAcceleratorError
from accelerators.hpu import HPUAccelerator
from accelerators.mps import MPSAccelerator
from accelerators.npu import NPUAccelerator
from accelerators.xpu import XPUAccelerator

# Detection order: vendor accelerators first, then cuda (ROCm included), xpu, mps, and cpu last.
ACCELERATORS: tuple[type[Accelerator], ...] = (
    HPUAccelerator,
    NPUAccelerator,
    CUDAAccelerator,
    XPUAccelerator,
    MPSAccelerator,
    CPUAccelerator,
)



def known_accelerators() -> tuple[str, ...]:
    """The accelerator names, in detection order."""
    return tuple(cls.name for cls in ACCELERATORS)


def accelerator_class(name: str) -> type[Accelerator]:
    """The accelerator class called `name`; UnknownAcceleratorError listing the known names otherwise."""
    for cls in ACCELERATORS:
        if cls.name == name:
            return cls
    raise UnknownAcceleratorError(name, known_accelerators())
