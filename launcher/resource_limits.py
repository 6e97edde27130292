"""The operating system's limits on the launcher, worded as limits (docs/RELIABILITY.md, "A limit is worded as
a limit"): the ones it can judge are checked before anything starts, and a limit it runs into anyway is one line
naming that limit, never an internal error.

A leaf and click-free: the first check runs before click is imported (launcher/cli/start.py), the last one in
the internal-error guard (launcher/cli/internal_error.py).
"""

from __future__ import annotations

import errno
import os
import resource

__all__ = ["open_files_problem", "file_size_problem", "address_space_problem", "exhausted_limit", "MIN_OPEN_FILES",
           "OPEN_FILES_PER_RANK", "MIN_FILE_SIZE", "ENGINE_ADDRESS_SPACE"]

# What the launcher (with torch elastic's agent, the heavier path) and one rank of a gloo job need of open files,
# measured on both paths: 2 ranks ran at 24 and failed at 16; 8 ranks ran at 64 and failed at 32.
MIN_OPEN_FILES = 32
OPEN_FILES_PER_RANK = 4
# The launcher's own files are small, but a rank's log of a few lines must fit: below this, the first rank to write
# more ends with EFBIG (Python ignores SIGXFSZ) or the launcher's private folder cannot be marked.
MIN_FILE_SIZE = 1 << 20
# The engine path imports torch into the launcher: at 400 MiB of address space it aborted (std::bad_alloc), at
# 800 MiB it ran; the direct path needs far less and is not checked.
ENGINE_ADDRESS_SPACE = 1 << 30
_MIB = 1 << 20
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
    """The line for a file-size limit (ulimit -f) too small for the launcher's files and the ranks' logs, else
    None."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == resource.RLIM_INFINITY or soft >= MIN_FILE_SIZE:
        return None
    return (f"the file-size limit (ulimit -f) is {soft} bytes; accel-launch needs at least {MIN_FILE_SIZE} for its "
            "files and the ranks' logs: raise it, e.g. ulimit -f unlimited")


def address_space_problem() -> str | None:
    """The line for an address-space limit (ulimit -v) too small for a launcher that imports torch, else None."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft >= ENGINE_ADDRESS_SPACE:
        return None
    return (f"the address-space limit (ulimit -v) is {soft // _MIB} MiB; a launch on torch elastic's engine imports "
            f"torch, which needs at least {ENGINE_ADDRESS_SPACE // _MIB} MiB: raise the limit, or unset it")


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
    if code == errno.ENFILE:
        return "the system's open-file table is full (ENFILE): close files elsewhere, or raise fs.file-max"
    if code == errno.EMFILE or any(words in text for words in _OPEN_FILES_WORDS):
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return f"the open-file limit (ulimit -n) of {_shown(soft)} was reached: raise it, e.g. ulimit -n 1024"
    if isinstance(exc, MemoryError) or code == errno.ENOMEM or any(words in text for words in _MEMORY_WORDS):
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return "the launcher ran out of memory (no address-space limit is set: the machine's memory ran out)"
        return f"the address-space limit (ulimit -v) of {soft // _MIB} MiB was reached: raise the limit, or unset it"
    return None


def _file_size_note() -> str:
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return "" if soft == resource.RLIM_INFINITY else f" (the file-size limit, ulimit -f, is {soft} bytes)"


def _shown(limit: int) -> str:
    return "unlimited" if limit == resource.RLIM_INFINITY else str(limit)
