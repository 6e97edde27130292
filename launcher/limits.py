"""The launcher's limits: the bounds on every count a user can ask for, with the one parser of the whole numbers
they give; and the operating system's limits on the launcher, worded as limits.

Ranks, nodes, devices, cores and slots reach the launcher as flags, hostfile lines, include/exclude
selections, Slurm and OpenMPI variables and the node table. Each is read with `whole_number` against one
`Limit` below, before anything is expanded or started (docs/RELIABILITY.md has the table): ASCII digits
only (not `٣`, `２`, `1_0`, `+1` or ` 1`, which Python's `int()` takes), and never more than the limit.

The operating system's limits (docs/RELIABILITY.md, "A limit is worded as a limit"): the ones it can judge are
checked before anything starts, and a limit it runs into anyway is one line naming that limit, never an internal
error.

A leaf and click-free: the first check runs before click is imported (launcher/cli/start.py), the last one in
the internal-error guard (launcher/cli/start.py).
"""

from __future__ import annotations

import errno
import os
import resource
from dataclasses import dataclass

from launcher.errors import UsageError

__all__ = ["Limit", "CountError", "RANKS_PER_NODE", "NODES", "TOTAL_RANKS", "CORES", "PORTS", "NOT_A_NUMBER", "integer",
           "whole_number", "check_count", "open_files_problem", "file_size_problem", "address_space_problem",
           "lean_threads", "exhausted_limit", "MIN_OPEN_FILES", "OPEN_FILES_PER_RANK", "MIN_FILE_SIZE", "ENGINE_ADDRESS_SPACE"]

NOT_A_NUMBER = "expected a whole number written with the digits 0-9"
# Longer digit strings are refused before int() sees them (int() of a huge string is itself slow).
_MAX_DIGITS = 18


@dataclass(frozen=True)
class Limit:
    """At most `maximum` of `what` (e.g. 4096 ranks per node)."""

    maximum: int
    what: str

    def __str__(self) -> str:
        return f"at most {self.maximum} {self.what}"


RANKS_PER_NODE = Limit(4096, "ranks per node")  # also the bound on a device or slot index (below it)
NODES = Limit(65536, "nodes")  # Slurm's own ceiling is 65533 nodes in one job
TOTAL_RANKS = Limit(1 << 20, "ranks in the job")
CORES = Limit(65536, "cores")  # core numbers are below it; Linux builds for at most 8192
PORTS = Limit(65535, "(the highest TCP port)")


class CountError(UsageError, ValueError):
    """A count or index that is not a whole number, or is outside its bound; names where it came from."""


def integer(text: str, source: str, too_long: str = f"has more than {_MAX_DIGITS} digits") -> int:
    """`text` as an int: an optional '-' and 1 to 18 ASCII digits, nothing else (no sign '+', no spaces,
    no '_', no other script's digits); CountError naming `source` otherwise (`too_long` says why a longer
    number is refused)."""
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise CountError(source, _shown(text), NOT_A_NUMBER)
    if len(digits) > _MAX_DIGITS:
        raise CountError(source, _shown(text), too_long)
    return int(text)


def whole_number(text: str, source: str, limit: Limit, minimum: int = 0, index: bool = False) -> int:
    """`text` as an int from `minimum` to `limit` (below it when `index`); CountError naming `source`
    (a flag, a hostfile line, a variable) otherwise."""
    too_long = f"must be below {limit.maximum}" if index else str(limit)
    return check_count(integer(text, source, too_long), source, limit, minimum, index, shown=text)


def check_count(value: int, source: str, limit: Limit, minimum: int = 0, index: bool = False,
                shown: str | None = None) -> int:
    """`value` itself when `minimum <= value <= limit.maximum` (`< maximum` when `index`); CountError otherwise."""
    shown = str(value) if shown is None else shown
    if value < minimum:
        raise CountError(source, _shown(shown), f"must be at least {minimum}")
    if index and value >= limit.maximum:
        raise CountError(source, _shown(shown), f"must be below {limit.maximum}")
    if value > limit.maximum:
        raise CountError(source, _shown(shown), str(limit))
    return value


def _shown(text: str) -> str:
    """`text`, cut to a length that keeps the error one short line."""
    return text if len(text) <= 40 else f"{text[:37]}..."


# What the launcher (with torch elastic's agent, the heavier path) and one rank of a gloo job need of open files,
# measured on both paths: 2 ranks ran at 24 and failed at 16; 8 ranks ran at 64 and failed at 32.
MIN_OPEN_FILES = 32
OPEN_FILES_PER_RANK = 4
# What a launch cannot do without: its own small files (Python's probe of the temp folder, 4 bytes; the private
# folder's owner record, about 20; the pid file) and the ranks' records (a compile state, a refusal: a few hundred).
# 1 KiB, the smallest limit `ulimit -f` sets above 0, holds each; below it the private folder could not be marked. A
# log is a copy: one that reaches the limit is left incomplete, with one line (launcher/run/group/output_copy.py), and the
# job runs, as under torchrun (docs/RELIABILITY.md, round six).
MIN_FILE_SIZE = 1 << 10
# The engine path imports torch into the launcher: at 400 MiB of address space it aborted (std::bad_alloc), at
# 800 MiB it ran; the direct path needs far less and is not checked.
ENGINE_ADDRESS_SPACE = 1 << 30
_MIB = 1 << 20
_THREAD_STACK = 1 << 20
_M_ARENA_MAX = -8  # glibc's malloc.h
# Words by which torch's own errors (DistStoreError, DistNetworkError, an ImportError of its libraries) say a
# limit was reached: libuv's "Failed to init uv loop" is its EMFILE.
_OPEN_FILES_WORDS = ("too many open files", "emfile", "failed to init uv loop")
_MEMORY_WORDS = ("cannot allocate memory", "failed to map segment", "bad_alloc", "can't start new thread")


def open_files_problem(ranks: int = 0) -> str | None:
    """The line for an open-file limit (ulimit -n) too low for the launcher and `ranks` ranks, else None."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = MIN_OPEN_FILES + OPEN_FILES_PER_RANK * ranks
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    share = f"{MIN_OPEN_FILES}, and {OPEN_FILES_PER_RANK} per rank"
    for_whom = f" for {ranks} rank(s) on this node ({share})" if ranks else ""
    return (f"the open-file limit (ulimit -n) is {soft}; accel-launch needs at least {needed} open files{for_whom}: "
            "raise it, e.g. ulimit -n 1024")


def file_size_problem() -> str | None:
    """The line for a file-size limit (ulimit -f) too small for the launcher's own files, else None (the logs are
    copies, left incomplete at the limit)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == resource.RLIM_INFINITY or soft >= MIN_FILE_SIZE:
        return None
    return (f"the file-size limit (ulimit -f) is {soft} bytes; accel-launch needs at least {MIN_FILE_SIZE} for its "
            "own small files: raise it, e.g. ulimit -f unlimited")


def address_space_problem(importer: str = "a launch on torch elastic's engine") -> str | None:
    """The line for an address-space limit (ulimit -v) too small for `importer`, which imports torch, else None."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft >= ENGINE_ADDRESS_SPACE:
        return None
    return (f"the address-space limit (ulimit -v) is {soft // _MIB} MiB; {importer} imports torch, which needs at "
            f"least {ENGINE_ADDRESS_SPACE // _MIB} MiB: raise the limit, or unset it")


def lean_threads() -> None:
    """Under an address-space limit (ulimit -v), the launcher's threads (output copies, the watch, the keeper's
    guard) each reserve a 1 MiB stack and share malloc's first arena, not 8 MiB and an arena of 64 MiB each: a job
    costs the launcher about the same address space whatever it watches with (7 threads took 465 MiB, 5 took 320).
    Nothing is changed without a limit, and nothing reaches the ranks (an exec starts them afresh)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return
    import ctypes
    import threading

    threading.stack_size(_THREAD_STACK)
    try:
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 1)  # glibc's; elsewhere the call is missing or refused: no harm
    except (OSError, AttributeError):
        pass


def exhausted_limit(exc: BaseException) -> str | None:
    """The one line for an exception (or one it came from) that says a limit was reached, else None."""
    seen = 0
    while exc is not None and seen < 10:
        line = _limit_of(exc)
        if line is not None:
            return line
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _limit_of(exc: BaseException) -> str | None:
    if isinstance(exc, FileNotFoundError) and "No usable temporary directory" in str(exc):
        return (f"no usable folder for temporary files: TMPDIR ({os.environ.get('TMPDIR') or 'unset'}), /tmp, "
                f"/var/tmp and the working directory all refused a file{_file_size_note()}; set TMPDIR to a "
                "folder you can write")
    code = exc.errno if isinstance(exc, OSError) else None
    text = str(exc).lower()
    if code == errno.EFBIG:
        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
        return (f"the file-size limit (ulimit -f) of {_limit_text(soft)} bytes was reached: raise it, e.g. "
                "ulimit -f unlimited")
    if code == errno.ENFILE:
        return "the system's open-file table is full (ENFILE): close files elsewhere, or raise fs.file-max"
    if code == errno.EMFILE or any(words in text for words in _OPEN_FILES_WORDS):
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return f"the open-file limit (ulimit -n) of {_limit_text(soft)} was reached: raise it, e.g. ulimit -n 1024"
    if isinstance(exc, MemoryError) or code == errno.ENOMEM or any(words in text for words in _MEMORY_WORDS):
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return "the launcher ran out of memory (no address-space limit is set: the machine's memory ran out)"
        return f"the address-space limit (ulimit -v) of {soft // _MIB} MiB was reached: raise the limit, or unset it"
    return None


def _file_size_note() -> str:
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return "" if soft == resource.RLIM_INFINITY else f" (the file-size limit, ulimit -f, is {soft} bytes)"


def _limit_text(limit: int) -> str:
    return "unlimited" if limit == resource.RLIM_INFINITY else str(limit)
