"""Intel Gaudi (Habana) devices through the habana_frameworks package."""

from __future__ import annotations

from accelerators.abstract import Accelerator, import_if_installed
from accelerators.backend_requirements import package_installed

_PACKAGE = "habana_frameworks"


class HPUAccelerator(Accelerator):
    """Gaudi HPUs, compiling with habana's 'hpu_backend' and talking over HCCL."""

    name = "hpu"
    default_compile_backend = "hpu_backend"
    communication_backend = "hccl"
    visible_devices_env = "HABANA_VISIBLE_MODULES"

    @classmethod
    def is_available(cls) -> bool:
        """True when habana_frameworks is installed and reports a device."""
        return cls.device_count() > 0

    @classmethod
    def device_count(cls) -> int:
        """The number of HPUs, zero without habana_frameworks (importing it registers 'hpu_backend')."""
        hpu = import_if_installed(_PACKAGE, "habana_frameworks.torch.hpu")
        return hpu.device_count() if hpu is not None and hpu.is_available() else 0

    @classmethod
    def unavailable_reason(cls) -> str:
        """The package missing, or no devices."""
        if not package_installed(_PACKAGE):
            return f"the package '{_PACKAGE}' is not installed"
        return "no HPU devices found"
