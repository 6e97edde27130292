"""The launcher's own check of the resolved backend, before any rank starts (docs/CONTRACT.md section 2).

Names are judged by the accelerator's own `explain_unsupported`, so launcher and ranks agree. Import
paths are only looked up here (`find_spec`), not imported: importing is user code, and it runs in
every rank, whose check stays authoritative.
"""

from __future__ import annotations

import importlib.util

from accelerators import UnsupportedBackendError, explain_unsupported, is_import_path
from accelerators.import_path import ImportPathError, split_import_path
from launcher.errors import BackendRefusedError
from launcher.resolve.backend import ResolvedBackend
from launcher.resolve.node_facts import AcceleratorFacts

__all__ = ["check_backend"]


def check_backend(backend: ResolvedBackend, accelerator: AcceleratorFacts) -> None:
    """Raise BackendRefusedError, worded with the backend's source, when `accelerator` cannot use it."""
    name = backend.name
    if name == name.strip() and is_import_path(name):
        problem = _import_path_problem(name)
        error = None
        if problem:
            error = UnsupportedBackendError(name, accelerator.name, accelerator.supported_backends, problem)
    else:
        error = explain_unsupported(name, accelerator.name, accelerator.supported_backends)
    if error is not None:
        raise BackendRefusedError(str(error.with_source(backend.source))) from None


def _import_path_problem(path: str) -> str | None:
    """Why `path` cannot name a callable, judged without importing its module; None when it may."""
    try:
        module, _ = split_import_path(path)
    except ImportPathError as exc:
        return exc.reason
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        return f"module {module!r} cannot be found ({exc.__class__.__name__}: {exc})"
    except Exception as exc:  # a parent package that raises while being imported
        return f"importing {module!r} raised {exc.__class__.__name__}: {exc}"
    if spec is None:
        return f"no module named {module!r}"
    return None
