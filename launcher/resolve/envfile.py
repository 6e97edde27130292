"""Reading the `.env` file: values only, never executed, and never over the process environment."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from launcher.errors import EnvFileError
from launcher.resolve.safe_read import UnsafeFileError, read_user_text

__all__ = ["read_env_file", "default_env_file", "merged_environ"]

# A .env holds a few variables; anything near this is not one.
_MAX_BYTES = 1 << 20


def default_env_file(cwd: Path) -> Path | None:
    """The `.env` in the working directory when there is one (never a search up from site-packages)."""
    candidate = cwd / ".env"
    return candidate if candidate.is_file() else None


def read_env_file(path: Path) -> dict[str, str]:
    """Parse `path` without touching os.environ; a line that is not `NAME=value` is an error with its number."""
    try:
        text = read_user_text(str(path), _MAX_BYTES)
    except UnsafeFileError as exc:
        raise EnvFileError(str(path), str(exc)) from None
    if "\0" in text:
        raise EnvFileError(str(path), "contains a NUL character, which no variable can hold",
                           line=text.count("\n", 0, text.index("\0")) + 1)
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            statement = binding.original.string.strip()
            raise EnvFileError(
                str(path), f"not a NAME=value line: {statement[:60]!r}", line=binding.original.line
            )
    values = dotenv_values(stream=io.StringIO(text), interpolate=False)
    return {name: value for name, value in values.items() if value is not None}


def merged_environ(process: Mapping[str, str], file_values: Mapping[str, str]) -> dict[str, str]:
    """The environment the job sees: the file's values under the process environment, which wins."""
    return {**file_values, **process}
