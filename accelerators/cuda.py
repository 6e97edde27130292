"""NVIDIA GPUs, and AMD GPUs through a ROCm build of torch (which answers to torch.cuda too)."""

from __future__ import annotations

from accelerators.accelerator import Accelerator
from accelerators.torch_build import TorchBuild


class CUDAAccelerator(Accelerator):
    """CUDA or ROCm devices, talking over NCCL (RCCL on ROCm, under the same name)."""

    name = "cuda"
    default_compile_backend = "inductor"
    communication_backend = "nccl"
    # ROCm honours CUDA_VISIBLE_DEVICES as well as its own HIP_VISIBLE_DEVICES.
    visible_devices_env = "CUDA_VISIBLE_DEVICES"
    exclusive_backends = ("cudagraphs",)
    nproc_word = "gpu"
    export_env_prefixes = ("NCCL",)

    @classmethod
    def ruled_out(cls, build: TorchBuild) -> bool:
        """A torch built with neither CUDA nor ROCm, and without their libraries."""
        return build.built_without("cuda", "hip")

    @classmethod
    def is_available(cls) -> bool:
        """True when torch was built with CUDA or ROCm and sees a device."""
        import torch

        return torch.cuda.is_available()

    @classmethod
    def device_count(cls) -> int:
        """The number of visible CUDA/ROCm devices."""
        import torch

        return torch.cuda.device_count()

    @classmethod
    def unavailable_reason(cls) -> str:
        """Torch without CUDA/ROCm, or no devices."""
        import torch

        if torch.version.cuda is None and torch.version.hip is None:
            return "torch built without CUDA or ROCm"
        return "no CUDA devices visible"
