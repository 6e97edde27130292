"""Dynamo's side of the compile backends: which it lists, which it never offers, and how a refusal is worded.

`torch._dynamo` is imported only when the registry is walked (`registered_backends`); the wording of a refusal
(`refusal`) is pure and torch-free, so the launcher and every rank share it. What a device can run is the device
class's own rule (`Accelerator.backend_problem` in accelerators/accelerator.py), handed in where a refusal needs it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence

from accelerators.errors import UnsupportedBackendError

MINIFIER_BACKENDS: frozenset[str] = frozenset({"dynamo_minifier_backend", "dynamo_accuracy_minifier_backend"})
TESTING_ONLY_SUFFIX = "_TESTING_ONLY"


def registered_backends() -> tuple[str, ...]:
    """Walk dynamo's live registry (entry-point backends included), minus testing-only and minifier ones."""
    from torch._dynamo import list_backends

    return tuple(name for name in list_backends(exclude_tags=()) if not is_excluded(name))


def is_excluded(name: str) -> bool:
    """True for dynamo's testing-only and minifier backends, which are never offered."""
    return listing_problem(name) is not None


def listing_problem(name: str) -> str | None:
    """Why dynamo's backend `name` is never offered on any device, or None."""
    if name.endswith(TESTING_ONLY_SUFFIX):
        return "a testing-only backend of dynamo"
    if name in MINIFIER_BACKENDS:
        return "a minifier backend for debugging dynamo, not for running models"
    return None


def refusal(backend: str, device: str, supported: Sequence[str],
            device_problem: Callable[[str], str | None]) -> UnsupportedBackendError | None:
    """None when backend NAME `backend` is in `supported` on `device`; else the error, its reason from the name
    itself, from `device_problem` (the device's rule), or that dynamo does not know it."""
    if backend in supported:
        return None
    if not backend.strip():
        reason = "the name is blank"
    elif backend != backend.strip():
        reason = "the name has surrounding whitespace"
    else:
        reason = device_problem(backend) or ("not a registered dynamo backend" + _non_ascii_note(backend))
    return UnsupportedBackendError(backend, device, supported, reason)


def _non_ascii_note(name: str) -> str:
    """A note naming the first non-ASCII character of `name`, or '' when it is all ASCII."""
    for char in name:
        if not char.isascii():
            label = unicodedata.name(char, "unnamed character").lower()
            return f" (it contains {char!r}, U+{ord(char):04X} {label})"
    return ""
