"""Intel Gaudi (Habana) devices through the habana_frameworks package."""

from __future__ import annotations

from accelerators.accelerator import Accelerator


class HPUAccelerator(Accelerator):
    """Gaudi HPUs, compiling with habana's 'hpu_backend' and talking over HCCL."""

    name = "hpu"
    default_compile_backend = "hpu_backend"
    communication_backend = "hccl"
    visible_devices_env = "HABANA_VISIBLE_MODULES"
    package = "habana_frameworks"
    # Importing it also registers 'hpu_backend'.
    device_module = "habana_frameworks.torch.hpu"
    exclusive_backends = ("hpu_backend",)
