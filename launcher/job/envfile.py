"""Reading the `.env` file: values only, never executed, and never over the process environment."""

from __future__ import annotations

import io
import logging
from pathlib import Path

from dotenv import dotenv_values

from launcher.errors import EnvFileError
from launcher.contract.variable_names import name_problem
from launcher.shared_files import ForeignFileError, UnsafeFileError, read_user_text

__all__ = ["read_env_file", "default_env_file"]

# A .env holds a few variables; anything near this is not one.
_MAX_BYTES = 1 << 20


def default_env_file(cwd: Path) -> Path | None:
    """The `.env` in the working directory when there is one (never a search up from site-packages)."""
    candidate = cwd / ".env"
    return candidate if candidate.is_file() else None


def read_env_file(path: Path, named: bool = True) -> dict[str, str]:
    """Parse `path` without touching os.environ; a line that is not `NAME=value` (NAME a variable name, as
    `--export` takes them) is an error with its number. A file found rather than `named` (`./.env`) that another
    user could write is refused, saying how to use it anyway."""
    try:
        text = read_user_text(str(path), _MAX_BYTES, unshared=not named)
    except ForeignFileError as exc:
        raise EnvFileError(str(path), f"{exc}; another user could have written it: make it your own (chown, chmod "
                                      f"o-w), or name it with --env-file to use it as it is") from None
    except UnsafeFileError as exc:
        raise EnvFileError(str(path), str(exc)) from None
    if "\0" in text:
        raise EnvFileError(str(path), "contains a NUL character, which no variable can hold",
                           line=text.count("\n", 0, text.index("\0")) + 1)
    unparsed = _UnparsedLines()
    dotenv_logger = logging.getLogger("dotenv.main")
    dotenv_logger.addFilter(unparsed)
    try:
        values = dotenv_values(stream=io.StringIO(text), interpolate=False)
    finally:
        dotenv_logger.removeFilter(unparsed)
    if unparsed.lines:
        line = unparsed.lines[0]
        statement = text.splitlines()[line - 1].strip() if line <= len(text.splitlines()) else ""
        raise EnvFileError(str(path), f"not a NAME=value line: {statement[:60]!r}", line=line)
    bad = next((name for name in values if name_problem(name) is not None), None)
    if bad is not None:
        raise EnvFileError(str(path), f"{bad[:60]!r} {name_problem(bad)}", line=_line_of(text, bad))
    return {name: value for name, value in values.items() if value is not None}


def _line_of(text: str, name: str) -> int | None:
    """The number of the first line that assigns `name` (python-dotenv gives the names, not their lines)."""
    for number, line in enumerate(text.splitlines(), start=1):
        statement = line.strip().removeprefix("export").strip()
        if statement.startswith((name, f"'{name}", f'"{name}')):
            return number
    return None


class _UnparsedLines(logging.Filter):
    """Notes the line numbers python-dotenv warns it could not parse (its public warning, not its private
    parser), and keeps the warning itself off the terminal: the launcher says it in its own one line."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[int] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and isinstance(record.args, tuple) and isinstance(record.args[0], int):
            self.lines.append(record.args[0])
            return False
        return True
