"""Whether the system can run a `--no-python` program, judged from its first bytes as the kernel's exec does.

A `#!` script needs its interpreter (followed, as Linux does, through up to four nested `#!` lines), and
an ELF binary needs all of its header and program headers: a truncated file fails in exec. Other formats
(binfmt_misc) are left to exec, whose failure each rank reports in one line.
"""

from __future__ import annotations

import os
import stat
import struct

from launcher.safe_read import UnsafeFileError, read_user_start

__all__ = ["program_problem"]

_HEAD_BYTES = 256  # the kernel reads as much of a file to decide how to run it
_MAX_NESTING = 4
_ELF_MAGIC = b"\x7fELF"
# ELF class -> (header size, offset of e_phoff, its struct format, offset of e_phentsize and e_phnum)
_ELF_LAYOUT = {1: (52, 28, "I", 42), 2: (64, 32, "Q", 54)}
_ELF_ORDER = {1: "<", 2: ">"}


def program_problem(path: str, nesting: int = 0) -> str | None:
    """Why exec cannot run the program at `path` (a few words), or None when nothing is known to be wrong."""
    if not os.access(path, os.R_OK):
        return None  # an execute-only binary: exec can run what the launcher cannot read
    try:
        head, size = read_user_start(path, _HEAD_BYTES)
    except UnsafeFileError as exc:
        return str(exc)
    if head.startswith(b"#!"):
        return _interpreter_problem(head, nesting)
    if head.startswith(_ELF_MAGIC):
        return _elf_problem(head, size)
    return None


def _interpreter_problem(head: bytes, nesting: int) -> str | None:
    # As the kernel reads it: the line ends at a newline or NUL, and only spaces and tabs separate, so a '\r'
    # (a Windows line end) is part of the interpreter's name.
    line = head[2:].split(b"\n", 1)[0].split(b"\0", 1)[0].strip(b" \t")
    if not line:
        return "its #! line names no interpreter"
    interpreter = os.fsdecode(line.replace(b"\t", b" ").split(b" ", 1)[0])
    if nesting >= _MAX_NESTING:
        return f"its #! lines nest deeper than {_MAX_NESTING} interpreters"
    try:
        mode = os.stat(interpreter).st_mode
    except OSError as exc:
        return f"its interpreter {interpreter!r} (from its #! line): {(exc.strerror or 'cannot be used').lower()}"
    if not stat.S_ISREG(mode) or not os.access(interpreter, os.X_OK):
        return f"its interpreter {interpreter!r} (from its #! line) is not an executable file"
    problem = program_problem(interpreter, nesting + 1)
    return None if problem is None else f"its interpreter {interpreter!r} (from its #! line): {problem}"


def _elf_problem(head: bytes, size: int) -> str | None:
    layout, order = _ELF_LAYOUT.get(head[4] if len(head) > 4 else 0), _ELF_ORDER.get(head[5] if len(head) > 5 else 0)
    if layout is None or order is None:
        return "is not an ELF binary this system can read (unknown class or byte order)"
    header, phoff_at, phoff_format, counts_at = layout
    if size < header or len(head) < header:
        return f"is a truncated ELF binary ({size} bytes; its header alone needs {header})"
    (phoff,) = struct.unpack_from(order + phoff_format, head, phoff_at)
    entry_size, entries = struct.unpack_from(order + "HH", head, counts_at)
    needed = phoff + entry_size * entries
    if size < needed:
        return f"is a truncated ELF binary ({size} bytes; its program headers end at byte {needed})"
    return None
