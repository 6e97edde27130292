"""Which accelerator this process uses: the ACCEL_ACCELERATOR override, else the first one available."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping

from accelerators.abstract import Accelerator
from accelerators.errors import AcceleratorUnavailableError
from accelerators.registry import ACCELERATORS, accelerator_class

log = logging.getLogger(__name__)

OVERRIDE_ENV = "ACCEL_ACCELERATOR"


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
    for cls in ACCELERATORS[:-1]:
        if cls.is_available():
            count = cls.device_count()
            return cls, f"detected: {cls.name} available, {count} device{'s' if count != 1 else ''}"
    return ACCELERATORS[-1], "fallback: no accelerator found"


@functools.cache
def get_accelerator() -> Accelerator:
    """This process's accelerator, detected from os.environ on the first call and then cached."""
    cls, how = detect_accelerator(os.environ)
    log.debug("accelerator %s (%s)", cls.name, how)
    return cls()
