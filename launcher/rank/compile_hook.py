"""The resolved backend in a rank: validated before user code (`install_backend`), then torch.compile's default
(`install_compile_hook`); a backend the code names is honoured, noted once by rank 0, and refused as the resolved
one would be when this accelerator cannot run it (docs/CONTRACT.md section 3).

Validation runs through the accelerator's `set_compile_backend`, against the node's cached facts when they are
current (keyed by torch's build, the dynamo entry points, the Python prefix and the device: no dynamo import, a
few milliseconds), else against dynamo's registry, walked once for the whole node. At the code's first compile,
the backend is judged once more against the live registry.

Nothing here imports or walks anything inside another module's import (docs/ARCHITECTURE.md, "Rules the code
keeps"): when torch has been imported, `torch.compile` is replaced by a wrapper, and when dynamo's registry has
been imported, the resolved backend becomes its default; two values set. The live registry is walked, and a
backend judged, inside the wrapper at the first compile that uses it, where `torch.compile` itself would import
dynamo next. `torch.nn.Module.compile` and `torch.compiler.compile` call `torch.compile`, so they are covered.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from accelerators import Accelerator, UnsupportedBackendError, get_accelerator, is_import_path
from accelerators.torch_build import torch_build
from launcher.contract.resolved_backend import ResolvedBackend, backend_refusal
from launcher.rank import node_facts_cache as facts_cache
from launcher.rank.after_import import after_import
from launcher.rank.refusal import refuse
from launcher.rank.torch_seams import holder

__all__ = ["install_compile_hook", "CODE_SOURCE", "install_backend"]

# Where a backend named in the user's code comes from, in a refusal line.
CODE_SOURCE = "torch.compile in the code"


class CompileRule:
    """What one process's `torch.compile` calls get: the resolved backend, or the one the code names."""

    def __init__(self, accelerator: Accelerator, given: ResolvedBackend) -> None:
        self.accelerator = accelerator
        self.given = given
        self._judged: set[str] = set()
        self._runnable: tuple[str, ...] | None = None
        self._noted = False
        self.default_made = False  # the resolved backend became torch's default (else torch's says nothing of the code)

    def backend_for(self, backend: Any) -> Any:
        """The backend for a compile whose code passed `backend` (None: none, so torch's default applies)."""
        name = self.accelerator.get_compile_backend()
        resolved = self.accelerator.resolved_compile_backend()
        if backend is None:
            backend = _torch_default(resolved) if self.default_made else resolved
        if backend is resolved or (isinstance(backend, str) and backend == name):
            if isinstance(name, str):
                self._judge(name, self.given.source)
            return resolved
        if isinstance(backend, str):
            self._judge(backend, CODE_SOURCE)
        self._note(backend)
        return backend

    def _judge(self, name: str, source: str) -> None:
        """Refuse `name` (exit 2, one line) when the live registry says this accelerator cannot run it."""
        if name in self._judged:
            return
        self._judged.add(name)
        if is_import_path(name) and name == self.accelerator.get_compile_backend():
            return  # imported, and so judged, when it was set
        if self._runnable is None:
            self._runnable = type(self.accelerator).runnable_backends()
        reason = backend_refusal(ResolvedBackend(name, source, name), self.accelerator.name, self._runnable)
        if reason is not None:
            refuse(reason)

    def _note(self, backend: Any) -> None:
        """Say once, from rank 0, that the code's backend is used instead of the resolved one."""
        if self._noted or os.environ.get("RANK", "0") != "0":
            return
        self._noted = True
        print(f"accel-launch: note: the code's torch.compile(backend={_shown(backend)}) is used, not the resolved "
              f"backend {self.given.describe()}", file=sys.stderr, flush=True)


def install_compile_hook(accelerator: Accelerator, given: ResolvedBackend) -> None:
    """Arrange, without importing torch, for every `torch.compile` of this process to follow `CompileRule`."""
    rule = CompileRule(accelerator, given)
    after_import("torch", lambda torch: _wrap_compile(torch, rule))
    after_import("torch._dynamo.backends.registry", lambda registry: _make_default(registry, rule))


def _wrap_compile(torch: ModuleType, rule: CompileRule) -> None:
    original: Callable[..., Any] = torch.compile

    @functools.wraps(original)
    def compile(*args: Any, **kwargs: Any) -> Any:
        kwargs["backend"] = rule.backend_for(kwargs.get("backend"))
        return original(*args, **kwargs)

    torch.compile = compile


def _make_default(registry: ModuleType, rule: CompileRule) -> None:
    """The resolved backend as torch's default (`torch.compiler.get_default_backend()`), where torch has one."""
    found = holder("default_backend_set", registry)
    if found is not None:
        getattr(*found)(rule.accelerator.resolved_compile_backend())
        rule.default_made = True


def _torch_default(resolved: Any) -> Any:
    """torch's default backend as the code left it: ours unless the code set its own."""
    registry = sys.modules.get("torch._dynamo.backends.registry")
    found = holder("default_backend_get", registry) if registry is not None else None
    return resolved if found is None else getattr(*found)()


def _shown(backend: Any) -> str:
    if isinstance(backend, str):
        return repr(backend)
    return getattr(backend, "__qualname__", None) or type(backend).__name__


def install_backend() -> Accelerator:
    """Validate the resolved backend in this rank and arrange for torch to use it; exits 2 on a refusal."""
    backend = ResolvedBackend.from_environment(os.environ)
    try:
        accelerator = get_accelerator()
        accelerator.assume_supported_backends(facts_cache.backends_for(accelerator, torch_build(), os.environ))
        accelerator.set_compile_backend(backend.name)
    except UnsupportedBackendError as exc:
        refuse(str(exc.with_source(backend.source)))
    except ValueError as exc:
        refuse(str(exc))
    install_compile_hook(accelerator, backend)
    return accelerator
