"""The exception a failed rank recorded in its error file, as torchrun's root cause shows it.

torch elastic's error handler (`@record`, `ErrorHandler.record_exception`) writes
`{"message": {"message": "Type: text", "extraInfo": {"py_callstack": "Traceback ..."}}}`; a plain
`{"message": "text"}` is accepted too. The file is the rank's, so it is read as untrusted input: never
through a symbolic link, never blocking, at most `MAX_ERROR_FILE_BYTES`, and what it says is cut to
`MAX_CAUSE_BYTES`; a file that is not such a record is reported as ignored, with why (docs/RELIABILITY.md).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from launcher.shared_files import UnsafeFileError, read_user_text

__all__ = ["RootCause", "ErrorFile", "clip", "read_error_file", "root_cause", "MAX_CAUSE_BYTES", "MAX_ERROR_FILE_BYTES"]

MAX_ERROR_FILE_BYTES = 32 << 20
MAX_CAUSE_BYTES = 4 << 10
_MAX_FRAME_BYTES = 1 << 10

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


@dataclass(frozen=True)
class ErrorFile:
    """What a rank's error file gave: its root cause and the whole record (handed on to the launcher's own
    error file, as torchrun's `@record` main does), or why the file was ignored (all None: no file)."""

    cause: RootCause | None = None
    ignored_because: str | None = None
    record: Mapping[str, object] | None = None


def read_error_file(path: str | None) -> ErrorFile:
    """The root cause recorded at `path`, whatever the rank left there (nothing, garbage, a FIFO, a link)."""
    if not path or not os.path.lexists(path):
        return ErrorFile()
    try:
        data = json.loads(read_user_text(path, MAX_ERROR_FILE_BYTES, follow_symlinks=False))
    except UnsafeFileError as exc:
        problem = str(exc)  # `is a FIFO, not a regular file`, `cannot be read (...)`, `permission denied`
        return ErrorFile(ignored_because=f"it {problem}" if problem.startswith(("is ", "cannot ")) else
                         f"it could not be opened ({problem})")
    except RecursionError:
        return ErrorFile(ignored_because="it is JSON nested too deeply")
    except json.JSONDecodeError as exc:
        return ErrorFile(ignored_because=f"it is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
    except ValueError as exc:
        return ErrorFile(ignored_because=f"it is not JSON ({clip(str(exc), _MAX_FRAME_BYTES)})")
    cause = root_cause(data)
    if cause is None and not _empty_record(data):
        return ErrorFile(ignored_because="it is not the record torch elastic writes (no message text)")
    return ErrorFile(cause, record=data if cause is not None else None)


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` bytes of UTF-8, with a marker saying how much was cut."""
    data = text.encode("utf-8", errors="replace")  # a lone surrogate from JSON's \ud800 becomes "?"
    if len(data) <= limit:
        return data.decode("utf-8")
    return f"{data[:limit].decode('utf-8', errors='ignore')} [... {len(data) - limit} more bytes cut]"


def root_cause(error_data: object) -> RootCause | None:
    """The root cause in an error file's JSON, or None when it holds no exception."""
    if not isinstance(error_data, Mapping):
        return None
    message = error_data.get("message")
    if isinstance(message, str):
        return RootCause(clip(message, MAX_CAUSE_BYTES)) if message.strip() and message != _NO_FILE else None
    if not isinstance(message, Mapping) or not isinstance(message.get("message"), str):
        return None
    extra = message.get("extraInfo")
    callstack = extra.get("py_callstack") if isinstance(extra, Mapping) else None
    frame = _raising_frame(callstack) if isinstance(callstack, str) else None
    return RootCause(clip(message["message"], MAX_CAUSE_BYTES), clip(frame, _MAX_FRAME_BYTES) if frame else None)


def _empty_record(data: object) -> bool:
    """True for a record that holds no message (`{}`, `{"message": ""}`, the engine's `<NONE>`): nothing to say."""
    if not isinstance(data, Mapping):
        return False
    message = data.get("message")
    return message is None or (isinstance(message, str) and (not message.strip() or message == _NO_FILE))


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
