"""The resolved backend in a rank: validated before user code, made torch's default when dynamo arrives.

Validation runs through the accelerator's `set_compile_backend`, against the node's cached facts when
they are current (keyed by torch's build, the dynamo entry points, the Python prefix and the device:
no dynamo import, a few milliseconds), else against dynamo's registry, walked once for the whole node.
When the user's code first imports `torch._dynamo` (any `torch.compile` does), the backend is checked
once more against the live registry and made torch's default, before the first compile.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from typing import NoReturn

from accelerators import Accelerator, UnsupportedBackendError, get_accelerator
from accelerators.backends import runnable_backends
from accelerators.torch_build import torch_build
from launcher.contract.backend import ResolvedBackend, backend_refusal
from launcher.contract.names import REFUSAL_PHRASE, VALIDATION_STATUS
from launcher.publish import publish_file
from launcher.rank import node_facts_cache as facts_cache
from launcher.rank.after_import import after_import

__all__ = ["install_backend", "refuse"]


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
    after_import("torch._dynamo", lambda _module: _make_default(accelerator, backend))
    return accelerator


def _make_default(accelerator: Accelerator, given: ResolvedBackend) -> None:
    """Check the backend against the live registry, then make it torch's default for `torch.compile`."""
    backend = accelerator.get_compile_backend()
    if isinstance(backend, str):
        # An import path was imported, and so judged, when it was set.
        reason = backend_refusal(replace(given, name=backend), accelerator.name, runnable_backends(accelerator.name))
        if reason is not None:
            refuse(reason)
    import torch.compiler

    if hasattr(torch.compiler, "set_default_backend"):
        torch.compiler.set_default_backend(accelerator.resolved_compile_backend())


def refuse(message: str, phrase: str = REFUSAL_PHRASE) -> NoReturn:
    """Hand the one-line reason to the launcher through the engine's error file, which prints it once; exit 2.
    `phrase`: what the rank refused (the compile backend, or START_REFUSAL_PHRASE: to run at all)."""
    import socket

    rank = os.environ.get("RANK", "?")
    line = f"rank {rank} on {socket.gethostname()} {phrase}: {message}"
    error_file = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if error_file:
        # Whole or not at all: a half-written record would be reported as an unreadable error file.
        publish_file(error_file, json.dumps({"message": line, "timestamp": int(time.time())}))
    else:
        print(f"accel-launch: {line}", file=sys.stderr, flush=True)
    sys.exit(VALIDATION_STATUS)

