"""Which accelerator this process uses: the ACCEL_ACCELERATOR override, else the first one available.

The known accelerators are registered here, in the order they are tried: a new device is one file and one
argument of `register` below.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping

from accelerators.accelerator import Accelerator, accelerator_class, register, registered
from accelerators.cpu import CPUAccelerator
from accelerators.cuda import CUDAAccelerator
from accelerators.errors import AcceleratorUnavailableError
from accelerators.hpu import HPUAccelerator
from accelerators.mps import MPSAccelerator
from accelerators.npu import NPUAccelerator
from accelerators.torch_build import TorchBuild, torch_build
from accelerators.xpu import XPUAccelerator

log = logging.getLogger(__name__)

# Vendor accelerators first, then cuda (ROCm included), xpu, mps, and cpu last: the fallback, always available.
register(HPUAccelerator, NPUAccelerator, CUDAAccelerator, XPUAccelerator, MPSAccelerator, CPUAccelerator)

OVERRIDE_ENV = "ACCEL_ACCELERATOR"
FALLBACK = "fallback: no accelerator found"


def detect_accelerator(environ: Mapping[str, str]) -> tuple[type[Accelerator], str]:
    """The accelerator class for `environ` and how it was chosen; reads nothing but `environ` and the hardware.

    A blank ACCEL_ACCELERATOR counts as unset.
    """
    override = environ.get(OVERRIDE_ENV, "").strip().lower()
    if override:
        cls = accelerator_class(override)
        if not cls.is_available():
            raise AcceleratorUnavailableError(override, cls.unavailable_reason())
        return cls, f"{OVERRIDE_ENV}={override}"
    *devices, last = registered()
    for cls in devices:
        if cls.is_available():
            count = cls.device_count()
            return cls, f"detected: {cls.name} available, {count} device{'s' if count != 1 else ''}"
    return last, FALLBACK


def detect_from_build(environ: Mapping[str, str], build: TorchBuild | None) -> tuple[type[Accelerator], str] | None:
    """What detect_accelerator would answer, when torch's files alone settle it: every device ruled out.

    None means only importing torch can tell. An ACCEL_ACCELERATOR override is left to detect_accelerator.
    """
    if environ.get(OVERRIDE_ENV, "").strip() or build is None:
        return None
    *devices, last = registered()
    if all(cls.ruled_out(build) for cls in devices):
        return last, FALLBACK
    return None


def find_accelerator(environ: Mapping[str, str]) -> tuple[type[Accelerator], str]:
    """What detect_accelerator answers, without importing torch where torch's files settle it (a CPU-only
    build rules every device out)."""
    return detect_from_build(environ, torch_build()) or detect_accelerator(environ)


@functools.cache
def get_accelerator() -> Accelerator:
    """This process's accelerator, found from os.environ on the first call (`find_accelerator`), then cached."""
    cls, how = find_accelerator(os.environ)
    log.debug("accelerator %s (%s)", cls.name, how)
    return cls()
