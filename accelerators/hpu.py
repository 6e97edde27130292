"""Intel Gaudi (Habana) devices through the habana_frameworks package."""

from __future__ import annotations

from accelerators.accelerator import Accelerator
from accelerators.packages import import_if_installed


class HPUAccelerator(Accelerator):
    """Gaudi HPUs, compiling with habana's 'hpu_backend' and talking over HCCL."""

    name = "hpu"
    default_compile_backend = "hpu_backend"
    communication_backend = "hccl"
    package = "habana_frameworks"
    exclusive_backends = ("hpu_backend",)
    visible_devices_env = "HABANA_VISIBLE_MODULES"

    @classmethod
    def device_count(cls) -> int:
        """The number of HPUs, zero without habana_frameworks (importing it registers 'hpu_backend')."""
        hpu = import_if_installed(cls.package, "habana_frameworks.torch.hpu")
        return hpu.device_count() if hpu is not None and hpu.is_available() else 0
