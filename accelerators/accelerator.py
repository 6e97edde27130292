"""The accelerator base class: identity as class attributes, the compile-backend get/set logic once; and the
table of known devices, in detection order, that lookup, detection and the backend rules read.

The table imports no device: each is handed to `register` as a class (accelerators/detect.py registers them, one
argument per device), and the rules judge a backend with the device's class in hand, never a lookup by its name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from accelerators import backends
from accelerators.errors import UnknownAcceleratorError, UnsupportedBackendError
from accelerators.import_path import ImportPathError, is_import_path, resolve_import_path
from accelerators.packages import import_if_installed, package_installed

if TYPE_CHECKING:
    from accelerators.torch_build import TorchBuild

log = logging.getLogger(__name__)

Backend = str | Callable[..., Any]


class Accelerator:
    """One kind of device: what it is called, how it compiles and communicates, how many it has."""

    name: ClassVar[str]
    default_compile_backend: ClassVar[str]
    communication_backend: ClassVar[str]
    visible_devices_env: ClassVar[str | None] = None
    # The vendor package that brings this device (and registers its backends), if it is not torch itself.
    package: ClassVar[str | None] = None
    # The vendor module that counts this device (its `is_available()` and `device_count()`), imported only when
    # `package` is installed; None for a device that counts its own (it overrides `device_count`).
    device_module: ClassVar[str | None] = None
    # Dynamo backends that run on this device only: refused on every other one.
    exclusive_backends: ClassVar[tuple[str, ...]] = ()
    # Backends that dynamo lists even when the package that implements them is not installed: runnable here only
    # with that package.
    backend_packages: ClassVar[Mapping[str, str]] = {
        "tvm": "tvm",
        "openxla": "torch_xla",
        "openxla_eval": "torch_xla",
        "ipex": "intel_extension_for_pytorch",
        "tensorrt": "torch_tensorrt",
        "torch_tensorrt": "torch_tensorrt",
        "onnxrt": "onnxruntime",
    }
    # torchrun's word for this device in `--nproc-per-node` ('gpu' for cuda), if it has one.
    nproc_word: ClassVar[str | None] = None
    # DeepSpeed's `export_envs()` for this device: the head's variables with these prefixes reach every node of a
    # hostfile launch, beside the runner's own (launcher/head/remote_env.py).
    export_env_prefixes: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self._compile_backend: Backend = self.default_compile_backend
        self._resolved: Backend = self.default_compile_backend
        self._supported: tuple[str, ...] | None = None

    @classmethod
    def is_available(cls) -> bool:
        """True when this machine can run this accelerator: by default, when it has a device of this kind."""
        return cls.device_count() > 0

    @classmethod
    def device_count(cls) -> int:
        """How many devices of this kind this machine has: what `device_module` reports, zero without `package`."""
        if cls.package is None or cls.device_module is None:
            raise NotImplementedError(f"{cls.__name__} names no package and device_module: it counts its own devices")
        module = import_if_installed(cls.package, cls.device_module)
        return module.device_count() if module is not None and module.is_available() else 0

    @classmethod
    def ruled_out(cls, build: TorchBuild) -> bool:
        """True when this device is certainly unavailable, judged from torch's files and the installed packages
        without importing torch; False when only importing torch can tell."""
        return cls.package is not None and not package_installed(cls.package)

    @classmethod
    def unavailable_reason(cls) -> str:
        """Why `is_available()` is False, in a few words."""
        if cls.package is not None and not package_installed(cls.package):
            return f"the package '{cls.package}' is not installed"
        return f"no {cls.name.upper()} devices found"

    @classmethod
    def packages(cls) -> frozenset[str]:
        """The packages that decide what this device offers: its vendor package and those its backends need."""
        return frozenset({*([cls.package] if cls.package else []), *cls.backend_packages.values()})

    @classmethod
    def backend_problem(cls, name: str) -> str | None:
        """Why backend `name` cannot run on this device, or None when nothing stands in its way."""
        listed = backends.listing_problem(name)
        if listed is not None:
            return listed
        devices = claimants(name)
        if devices and cls.name not in devices:
            return f"runs only on {', '.join(devices)}"
        package = cls.backend_packages.get(name)
        if package is not None and not package_installed(package):
            return f"needs the package '{package}', which is not installed"
        return None

    @classmethod
    def runnable_backends(cls) -> tuple[str, ...]:
        """The registered backends this device can run, sorted; walks dynamo's registry once."""
        names = sorted(name for name in backends.registered_backends() if cls.backend_problem(name) is None)
        log.debug("compile backends runnable on %s: %s", cls.name, names)
        return tuple(names)

    @classmethod
    def explain_unsupported(cls, backend: str, supported: Sequence[str]) -> UnsupportedBackendError | None:
        """None when backend NAME `backend` is accepted here given the `supported` list; else the error.
        Names only: callers resolve import paths (see `is_import_path`) themselves."""
        return backends.refusal(backend, cls.name, supported, cls.backend_problem)

    @classmethod
    def max_ranks_per_node(cls) -> int | None:
        """The most ranks one node can run (one per device); None for no limit."""
        return cls.device_count()

    @classmethod
    def default_nproc(cls) -> int:
        """What `--nproc-per-node auto` means here."""
        return cls.device_count()

    @classmethod
    def word_nproc(cls) -> int:
        """What `--nproc-per-node <nproc_word>` means (asked only when the device is available): one rank per device."""
        return cls.device_count()

    def device_name(self) -> str:
        """The torch device type, e.g. 'cuda'."""
        return self.name

    def communication_backend_name(self) -> str:
        """The torch.distributed backend for this device, e.g. 'nccl'."""
        return self.communication_backend

    def get_compile_backend(self) -> Backend:
        """The current compile backend as it was set (the default before any set); no side effects."""
        return self._compile_backend

    def resolved_compile_backend(self) -> Backend:
        """The current backend for torch: the callable an import path names, else the name or callable."""
        return self._resolved

    def supported_compile_backends(self) -> tuple[str, ...]:
        """The backend names set_compile_backend accepts here, sorted; computed once per object."""
        if self._supported is None:
            self._supported = self.runnable_backends()
        return self._supported

    def assume_supported_backends(self, names: tuple[str, ...]) -> None:
        """Take `names` as this object's supported list (facts known current for this node, such as the
        launcher's cache), sparing the registry walk; a name outside it still walks the live registry."""
        self._supported = tuple(names)

    def set_compile_backend(self, backend: Backend) -> None:
        """Validate `backend` (a name, an import path or a callable), then store it."""
        if isinstance(backend, str):
            self._resolved = self._check_string(backend)
        elif callable(backend):
            self._resolved = backend
        else:
            kind = "None" if backend is None else type(backend).__name__
            reason = f"expected a backend name, an import path or a callable, got {kind}"
            raise UnsupportedBackendError(repr(backend), self.name, self.supported_compile_backends(), reason)
        self._compile_backend = backend
        log.debug("compile backend on %s set to %r", self.name, backend)

    def _check_string(self, backend: str) -> Backend:
        """The resolved form of a valid string backend; UnsupportedBackendError otherwise."""
        if backend == backend.strip() and is_import_path(backend):
            try:
                return resolve_import_path(backend)
            except ImportPathError as exc:
                raise UnsupportedBackendError(
                    backend, self.name, self.supported_compile_backends(), exc.reason
                ) from None
        error = self.explain_unsupported(backend, self.supported_compile_backends())
        if error is not None and backend and backend == backend.strip():
            # Registered after the list was cached? Walk the live registry once more before refusing.
            self._supported = self.runnable_backends()
            error = self.explain_unsupported(backend, self._supported)
        if error is not None:
            raise error
        return backend


ACCELERATORS: dict[str, type[Accelerator]] = {}


def register(*classes: type[Accelerator]) -> None:
    """Add `classes`, in this order, after those known; a name taken twice is refused (a bug, not user input)."""
    for cls in classes:
        if cls.name in ACCELERATORS:
            raise ValueError(f"accelerator {cls.name!r} is registered twice")
        ACCELERATORS[cls.name] = cls


def registered() -> tuple[type[Accelerator], ...]:
    """The accelerator classes, in detection order."""
    return tuple(ACCELERATORS.values())


def known_accelerators() -> tuple[str, ...]:
    """The accelerator names, in detection order."""
    return tuple(ACCELERATORS)


def accelerator_class(name: str) -> type[Accelerator]:
    """The accelerator class called `name`; UnknownAcceleratorError listing the known names otherwise."""
    cls = ACCELERATORS.get(name)
    if cls is None:
        raise UnknownAcceleratorError(name, known_accelerators())
    return cls


def claimants(backend: str) -> tuple[str, ...]:
    """The accelerators that claim `backend` as theirs alone; empty when any device may run it."""
    return tuple(name for name, cls in ACCELERATORS.items() if backend in cls.exclusive_backends)


def nproc_words() -> dict[str, type[Accelerator]]:
    """torchrun's device words for `--nproc-per-node` ('gpu', 'xpu', 'cpu'), each with the accelerator it counts."""
    return {cls.nproc_word: cls for cls in ACCELERATORS.values() if cls.nproc_word is not None}


def explain_unsupported(backend: str, device: str, supported: Sequence[str]) -> UnsupportedBackendError | None:
    """What `Accelerator.explain_unsupported` says for the device called `device` (the launcher knows devices by
    name: the facts of a node, the JobConfig)."""
    return accelerator_class(device).explain_unsupported(backend, supported)
