"""Why a backend name is refused: one pure, torch-free judgement shared by the launcher and the accelerators."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from accelerators.backend_requirements import requirement_problem
from accelerators.errors import UnsupportedBackendError


def _non_ascii_note(name: str) -> str:
    """A note naming the first non-ASCII character of `name`, or '' when it is all ASCII."""
    for char in name:
        if not char.isascii():
            label = unicodedata.name(char, "unnamed character").lower()
            return f" (it contains {char!r}, U+{ord(char):04X} {label})"
    return ""


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
