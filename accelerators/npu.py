"""Huawei Ascend NPUs through the torch_npu package."""

from __future__ import annotations

from accelerators.accelerator import Accelerator


class NPUAccelerator(Accelerator):
    """Ascend NPUs, compiling with the 'npu' backend that torch_npu registers, talking over HCCL."""

    name = "npu"
    default_compile_backend = "npu"
    communication_backend = "hccl"
    visible_devices_env = "ASCEND_RT_VISIBLE_DEVICES"
    package = "torch_npu"
    # What torch_npu installs as torch.npu; importing the package also adds the 'npu' backend.
    device_module = "torch_npu.npu"
    exclusive_backends = ("npu",)
    export_env_prefixes = ("ASCEND", "HCCL", "LD_LIBRARY", "PATH")
