"""Apple silicon GPUs through Metal Performance Shaders: one device per machine."""

from __future__ import annotations

import sys

from accelerators.accelerator import Accelerator
from accelerators.torch_build import TorchBuild


class MPSAccelerator(Accelerator):
    """The Apple GPU; recent torch compiles for it with inductor (Metal kernels); gloo between ranks."""

    name = "mps"
    default_compile_backend = "inductor"
    communication_backend = "gloo"
    visible_devices_env = None

    @classmethod
    def ruled_out(cls, build: TorchBuild) -> bool:
        """Anything but macOS."""
        return sys.platform != "darwin"

    @classmethod
    def is_available(cls) -> bool:
        """True on a Mac whose torch has MPS."""
        import torch

        return torch.backends.mps.is_available()

    @classmethod
    def device_count(cls) -> int:
        """One when MPS is available, else zero."""
        return 1 if cls.is_available() else 0

    @classmethod
    def unavailable_reason(cls) -> str:
        """Torch without MPS, or not a Mac with Metal."""
        import torch

        if not torch.backends.mps.is_built():
            return "torch built without MPS"
        return "no MPS device (needs macOS 12.3+ on Apple silicon)"
