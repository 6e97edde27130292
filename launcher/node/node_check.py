"""The launcher's own check of the resolved backend, before any rank starts (docs/CONTRACT.md section 2).

The judgement is `backend_refusal` (launcher.contract.resolved_backend), the one the ranks make too. Import paths
are only looked up here, not imported: importing is user code, and it runs in every rank, whose check stays
authoritative. They are looked up as the program would import them: its own folder first (the script's, or the
working directory for `-m`), then the launcher's path.

What the launcher needs to know about this node's accelerator is gathered in one place (`accelerator_facts`): the
launcher never needs an Accelerator object of its own: only these facts, so that how they are
obtained (and cached) can change behind one function. Where it can be done soundly they are obtained
without importing torch: the accelerator is decided from torch's files when they rule every device out
(`find_accelerator`), and the backend list comes from a cache keyed by what is installed (`facts_cache`).
Otherwise torch decides, as it does in every rank, whose check stays authoritative.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path

from accelerators import Accelerator
from accelerators.detect import find_accelerator
from accelerators.import_path import ImportPathError, split_import_path
from accelerators.torch_build import torch_build, torch_found
from launcher.contract.resolved_backend import ResolvedBackend, backend_refusal
from launcher.errors import BackendRefusedError, LaunchError, TorchMissingError
from launcher.limits import address_space_problem
from launcher.rank import node_facts_cache as facts_cache

__all__ = ["check_backend", "AcceleratorFacts", "accelerator_facts"]


def check_backend(backend: ResolvedBackend, accelerator: AcceleratorFacts, folder: Path | None = None) -> None:
    """Raise BackendRefusedError, worded with the backend's source, when `accelerator` cannot use it; an import
    path is looked up in `folder` (the program's, see `Program.import_folder`) first."""
    reason = backend_refusal(backend, accelerator.name, accelerator.supported_backends,
                             lambda path: _import_path_problem(path, folder))
    if reason is not None:
        raise BackendRefusedError(reason) from None


def _import_path_problem(path: str, folder: Path | None) -> str | None:
    """Why `path` cannot name a callable, judged without importing its module; None when it may. A dotted path
    without ':' may name attributes of a shorter module ('pkg.mod.Class.method'): as in the rank, the longest
    prefix that is a module counts."""
    try:
        module, _ = split_import_path(path)
    except ImportPathError as exc:
        return exc.reason
    first_problem = None
    while True:
        problem, missing = _module_problem(module, folder)
        if problem is None:
            return None
        first_problem = first_problem or problem
        parent = module.rpartition(".")[0]
        if ":" in path or not parent or not missing:
            return first_problem if missing else problem
        module = parent


def _module_problem(module: str, folder: Path | None) -> tuple[str | None, bool]:
    """Why `module` cannot be found, and whether it is simply missing (rather than raising); (None, False) when
    it exists."""
    try:
        spec = _in_folder(module, folder) if folder is not None else None
        spec = spec or importlib.util.find_spec(module)
    except ModuleNotFoundError as exc:  # a parent that is a module, not a package
        return f"module {module!r} cannot be found (ModuleNotFoundError: {exc})", True
    except (ImportError, ValueError) as exc:
        return f"module {module!r} cannot be found ({exc.__class__.__name__}: {exc})", False
    except Exception as exc:  # a parent package that raises while being imported
        return f"importing {module!r} raised {exc.__class__.__name__}: {exc}", False
    if spec is None:
        return f"no module named {module!r}", True
    return None, False


def _in_folder(module: str, folder: Path) -> ModuleSpec | None:
    """`module`'s spec when its top-level package lies in `folder`, found without importing anything."""
    top, *parts = module.split(".")
    spec = PathFinder.find_spec(top, [str(folder)])
    for part in parts:
        if spec is None:
            return None
        if spec.submodule_search_locations is None:
            raise ModuleNotFoundError(f"No module named {module!r}; {spec.name!r} is not a package")
        spec = PathFinder.find_spec(f"{spec.name}.{part}", list(spec.submodule_search_locations))
    return spec


@dataclass(frozen=True)
class AcceleratorFacts:
    """The accelerator a launch here would use (its class says what it is), how it was chosen, what this node
    has of it (probed once), and the compile backends it accepts."""

    device: type[Accelerator]
    detected_by: str
    device_count: int
    max_ranks_per_node: int | None
    default_nproc: int
    supported_backends: tuple[str, ...]

    @property
    def name(self) -> str:
        """The accelerator's name, e.g. 'cuda'."""
        return self.device.name

    @property
    def default_backend(self) -> str:
        """Its default compile backend."""
        return self.device.default_compile_backend

    @property
    def communication_backend(self) -> str:
        """Its torch.distributed backend, e.g. 'nccl'."""
        return self.device.communication_backend


def accelerator_facts(environ: Mapping[str, str]) -> AcceleratorFacts:
    """Detect the accelerator for `environ` (ACCEL_ACCELERATOR included) and list its backends; TorchMissingError
    where this Python has no torch."""
    if not torch_found():
        raise TorchMissingError(sys.executable)
    device, detected_by = find_accelerator(environ)
    return AcceleratorFacts(
        device=device,
        detected_by=detected_by,
        device_count=device.device_count(),
        max_ranks_per_node=device.max_ranks_per_node(),
        default_nproc=device.default_nproc(),
        supported_backends=facts_cache.backends_for(device(), torch_build(), environ, _torch_fits),
    )


def _torch_fits() -> None:
    """Refuse, in one line, a walk of dynamo's registry that would import torch past the address-space limit (torch
    aborts there with std::bad_alloc, which no handler catches)."""
    problem = address_space_problem("listing the compile backends, once for each torch install (cached after),")
    if problem is not None:
        raise LaunchError(problem)

