"""Intel GPUs through torch's built-in xpu device."""

from __future__ import annotations

from accelerators.accelerator import Accelerator
from accelerators.torch_build import TorchBuild


class XPUAccelerator(Accelerator):
    """Intel XPU devices, talking over XCCL."""

    name = "xpu"
    default_compile_backend = "inductor"
    communication_backend = "xccl"
    visible_devices_env = "ZE_AFFINITY_MASK"
    nproc_word = "xpu"

    @classmethod
    def ruled_out(cls, build: TorchBuild) -> bool:
        """A torch built without XPU, and without its libraries."""
        return build.built_without("xpu")

    @classmethod
    def is_available(cls) -> bool:
        """True when this torch has the xpu device and sees one."""
        import torch

        return hasattr(torch, "xpu") and torch.xpu.is_available()

    @classmethod
    def device_count(cls) -> int:
        """The number of visible XPU devices."""
        import torch

        return torch.xpu.device_count() if hasattr(torch, "xpu") else 0

    @classmethod
    def unavailable_reason(cls) -> str:
        """Torch without xpu, or no devices."""
        import torch

        if not hasattr(torch, "xpu") or not torch.xpu._is_compiled():
            return "torch built without XPU"
        return "no XPU devices visible"
