"""Huawei Ascend NPUs through the torch_npu package."""

from __future__ import annotations

from accelerators.accelerator import Accelerator
from accelerators.packages import import_if_installed


class NPUAccelerator(Accelerator):
    """Ascend NPUs, compiling with the 'npu' backend that torch_npu registers, talking over HCCL."""

    name = "npu"
    default_compile_backend = "npu"
    communication_backend = "hccl"
    package = "torch_npu"
    exclusive_backends = ("npu",)
    visible_devices_env = "ASCEND_RT_VISIBLE_DEVICES"

    @classmethod
    def device_count(cls) -> int:
        """The number of NPUs, zero without torch_npu (importing it adds torch.npu and the 'npu' backend)."""
        if import_if_installed(cls.package, cls.package) is None:
            return 0
        import torch

        return torch.npu.device_count() if torch.npu.is_available() else 0
