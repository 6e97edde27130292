"""The resolved backend in a rank: validated before user code, then handed to torch's compiler.

Validation runs through the accelerator's `set_compile_backend`, against the node's cached facts when
they are current (keyed by torch's build, the dynamo entry points, the Python prefix and the device:
no dynamo import, a few milliseconds), else against dynamo's registry, walked once for the whole node.
At the code's first compile, the backend is judged once more against the live registry
(launcher.rank.compile_hook).
"""

from __future__ import annotations

import os

from accelerators import Accelerator, UnsupportedBackendError, get_accelerator
from accelerators.torch_build import torch_build
from launcher.contract.resolved_backend import ResolvedBackend
from launcher.rank import node_facts_cache as facts_cache
from launcher.rank.compile_hook import install_compile_hook
from launcher.rank.refusal import refuse

__all__ = ["install_backend"]


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
