"""What a dynamo backend needs beyond being registered: a device, or a package.

Free of torch, so that the launcher and `explain_unsupported` can use it without importing torch.
The devices come from each accelerator's `exclusive_backends`; the packages from the table below.
`requirement_problem` is the one place that applies both.
"""

from __future__ import annotations

import importlib.util

# Backends that dynamo lists even when the package that implements them is not installed.
PACKAGE_NEEDED: dict[str, str] = {
    "tvm": "tvm",
    "openxla": "torch_xla",
    "openxla_eval": "torch_xla",
    "ipex": "intel_extension_for_pytorch",
    "tensorrt": "torch_tensorrt",
    "torch_tensorrt": "torch_tensorrt",
    "onnxrt": "onnxruntime",
}

MINIFIER_BACKENDS: frozenset[str] = frozenset({"dynamo_minifier_backend", "dynamo_accuracy_minifier_backend"})
TESTING_ONLY_SUFFIX = "_TESTING_ONLY"


def is_excluded(name: str) -> bool:
    """True for dynamo's testing-only and minifier backends, which are never offered."""
    return name.endswith(TESTING_ONLY_SUFFIX) or name in MINIFIER_BACKENDS


def package_installed(package: str) -> bool:
    """True when `package` can be imported; looks it up without importing it."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def exclusive_devices(backend: str) -> tuple[str, ...]:
    """The accelerators that claim `backend` as theirs alone; empty when any device may run it."""
    from accelerators import registry  # at call time: the registry's classes import this module

    return tuple(cls.name for cls in registry.ACCELERATORS if backend in cls.exclusive_backends)


def requirement_problem(name: str, device: str) -> str | None:
    """Why backend `name` cannot run on `device`, or None when nothing stands in its way."""
    if name.endswith(TESTING_ONLY_SUFFIX):
        return "a testing-only backend of dynamo"
    if name in MINIFIER_BACKENDS:
        return "a minifier backend for debugging dynamo, not for running models"
    devices = exclusive_devices(name)
    if devices and device not in devices:
        return f"runs only on {', '.join(devices)}"
    package = PACKAGE_NEEDED.get(name)
    if package is not None and not package_installed(package):
        return f"needs the package '{package}', which is not installed"
    return None
