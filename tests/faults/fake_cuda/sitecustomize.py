"""Fake a CUDA machine at one seam: CUDAAccelerator.is_available/device_count, from $FAULTS_FAKE_CUDA_DEVICES.

Put this directory on PYTHONPATH of a launch that must be refused before any rank needs real CUDA.
"""

import os

_count = os.environ.get("FAULTS_FAKE_CUDA_DEVICES")
if _count:
    from accelerators.cuda import CUDAAccelerator

    CUDAAccelerator.is_available = classmethod(lambda cls: True)
    CUDAAccelerator.device_count = classmethod(lambda cls, n=int(_count): n)
