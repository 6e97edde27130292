"""The launcher's own check of the resolved backend, before any rank starts (docs/CONTRACT.md section 2).

The judgement is `backend_refusal` (launcher.contract.backend), the one the ranks make too. Import paths
are only looked up here (`find_spec`), not imported: importing is user code, and it runs in every rank,
whose check stays authoritative.
"""

from __future__ import annotations

import importlib.util

from accelerators.import_path import ImportPathError, split_import_path
from launcher.contract.backend import ResolvedBackend, backend_refusal
from launcher.errors import BackendRefusedError
from launcher.resolve.node_facts import AcceleratorFacts

__all__ = ["check_backend"]


def check_backend(backend: ResolvedBackend, accelerator: AcceleratorFacts) -> None:
    """Raise BackendRefusedError, worded with the backend's source, when `accelerator` cannot use it."""
    reason = backend_refusal(backend, accelerator.name, accelerator.supported_backends, _import_path_problem)
    if reason is not None:
        raise BackendRefusedError(reason) from None


def _import_path_problem(path: str) -> str | None:
    """Why `path` cannot name a callable, judged without importing its module; None when it may. A dotted path
    without ':' may name attributes of a shorter module ('pkg.mod.Class.method'): as in the rank, the longest
    prefix that is a module counts."""
    try:
        module, _ = split_import_path(path)
    except ImportPathError as exc:
        return exc.reason
    first_problem = None
    while True:
        problem, missing = _module_problem(module)
        if problem is None:
            return None
        first_problem = first_problem or problem
        parent = module.rpartition(".")[0]
        if ":" in path or not parent or not missing:
            return first_problem if missing else problem
        module = parent


def _module_problem(module: str) -> tuple[str | None, bool]:
    """Why `module` cannot be found, and whether it is simply missing (rather than raising); (None, False) when
    it exists."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError as exc:  # a parent that is a module, not a package
        return f"module {module!r} cannot be found (ModuleNotFoundError: {exc})", True
    except (ImportError, ValueError) as exc:
        return f"module {module!r} cannot be found ({exc.__class__.__name__}: {exc})", False
    except Exception as exc:  # a parent package that raises while being imported
        return f"importing {module!r} raised {exc.__class__.__name__}: {exc}", False
    if spec is None:
        return f"no module named {module!r}", True
    return None, False
