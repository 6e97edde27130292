"""Which compile backends a device can run, and why one is refused: the one module that talks to dynamo.

`torch._dynamo` is imported only when the registry is walked (`registered_backends`); the judgement of a name
(`requirement_problem`, `explain_unsupported`) is pure and torch-free, so the launcher and every rank share it.
What a backend needs comes from the accelerator classes: the devices that claim it (`exclusive_backends`), and
the package it needs on the device at hand (`backend_packages`).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence

from accelerators.errors import UnsupportedBackendError
from accelerators.packages import package_installed
from accelerators.registry import accelerator_class, claimants

log = logging.getLogger(__name__)

MINIFIER_BACKENDS: frozenset[str] = frozenset({"dynamo_minifier_backend", "dynamo_accuracy_minifier_backend"})
TESTING_ONLY_SUFFIX = "_TESTING_ONLY"


def registered_backends() -> tuple[str, ...]:
    """Walk dynamo's live registry (entry-point backends included), minus testing-only and minifier ones."""
    from torch._dynamo import list_backends

    return tuple(name for name in list_backends(exclude_tags=()) if not is_excluded(name))


def runnable_backends(device: str) -> tuple[str, ...]:
    """The registered backends that `device` can run, sorted; walks the registry once."""
    names = sorted(name for name in registered_backends() if requirement_problem(name, device) is None)
    log.debug("compile backends runnable on %s: %s", device, names)
    return tuple(names)


def is_excluded(name: str) -> bool:
    """True for dynamo's testing-only and minifier backends, which are never offered."""
    return name.endswith(TESTING_ONLY_SUFFIX) or name in MINIFIER_BACKENDS


def requirement_problem(name: str, device: str) -> str | None:
    """Why backend `name` cannot run on `device`, or None when nothing stands in its way."""
    if name.endswith(TESTING_ONLY_SUFFIX):
        return "a testing-only backend of dynamo"
    if name in MINIFIER_BACKENDS:
        return "a minifier backend for debugging dynamo, not for running models"
    devices = claimants(name)
    if devices and device not in devices:
        return f"runs only on {', '.join(devices)}"
    package = accelerator_class(device).backend_packages.get(name)
    if package is not None and not package_installed(package):
        return f"needs the package '{package}', which is not installed"
    return None


def explain_unsupported(backend: str, device: str, supported: Sequence[str]) -> UnsupportedBackendError | None:
    """None when backend NAME `backend` is accepted on `device` given the `supported` list; else the error.

    Names only: callers resolve import paths (see `is_import_path`) themselves.
    """
    if backend in supported:
        return None
    if not backend.strip():
        reason = "the name is blank"
    elif backend != backend.strip():
        reason = "the name has surrounding whitespace"
    else:
        reason = requirement_problem(backend, device) or (
            "not a registered dynamo backend" + _non_ascii_note(backend)
        )
    return UnsupportedBackendError(backend, device, supported, reason)


def _non_ascii_note(name: str) -> str:
    """A note naming the first non-ASCII character of `name`, or '' when it is all ASCII."""
    for char in name:
        if not char.isascii():
            label = unicodedata.name(char, "unnamed character").lower()
            return f" (it contains {char!r}, U+{ord(char):04X} {label})"
    return ""
