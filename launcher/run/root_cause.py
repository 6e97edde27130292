"""The exception a failed rank recorded in its error file, as torchrun's root cause shows it.

torch elastic's error handler (`@record`, `ErrorHandler.record_exception`) writes
`{"message": {"message": "Type: text", "extraInfo": {"py_callstack": "Traceback ..."}}}`; a plain
`{"message": "text"}` is accepted too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["RootCause", "root_cause"]

# What torch elastic reports when a rank left no error file.
_NO_FILE = "<NONE>"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')


@dataclass(frozen=True)
class RootCause:
    """The recorded exception: `Type: message`, and the frame where it was raised (if the file has one)."""

    exception: str
    frame: str | None = None

    def lines(self) -> list[str]:
        """The exception's lines, then `raised at FILE:LINE in FUNC` and that line's source."""
        lines = self.exception.splitlines() or [self.exception]
        return [*lines, self.frame] if self.frame else lines


def root_cause(error_data: object) -> RootCause | None:
    """The root cause in an error file's JSON, or None when it holds no exception."""
    if not isinstance(error_data, Mapping):
        return None
    message = error_data.get("message")
    if isinstance(message, str):
        return RootCause(message) if message.strip() and message != _NO_FILE else None
    if not isinstance(message, Mapping) or not isinstance(message.get("message"), str):
        return None
    extra = message.get("extraInfo")
    callstack = extra.get("py_callstack") if isinstance(extra, Mapping) else None
    return RootCause(message["message"], _raising_frame(callstack) if isinstance(callstack, str) else None)


def _raising_frame(callstack: str) -> str | None:
    """`raised at FILE:LINE in FUNC: SOURCE` for the innermost frame of a formatted traceback."""
    lines = callstack.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        found = _FRAME.match(lines[index])
        if found is None:
            continue
        where = f"raised at {found['file']}:{found['line']} in {found['func']}"
        source = lines[index + 1] if index + 1 < len(lines) else ""
        # A source line is indented under its frame; an unindented line is already the exception.
        return f"{where}: {source.strip()}" if source.startswith("    ") and source.strip() else where
    return None
