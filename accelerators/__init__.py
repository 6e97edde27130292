"""The accelerator API: which device this process runs on, and its validated torch.compile backend."""

from __future__ import annotations

from accelerators.accelerator import Accelerator, accelerator_class, explain_unsupported, known_accelerators
from accelerators.detect import detect_accelerator, get_accelerator
from accelerators.errors import AcceleratorUnavailableError, UnknownAcceleratorError, UnsupportedBackendError
from accelerators.import_path import is_import_path

__all__ = [
    "Accelerator",
    "AcceleratorUnavailableError",
    "UnknownAcceleratorError",
    "UnsupportedBackendError",
    "accelerator_class",
    "detect_accelerator",
    "explain_unsupported",
    "get_accelerator",
    "is_import_path",
    "known_accelerators",
]
