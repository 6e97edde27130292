"""Reading a file the user named without ever blocking: regular files only, and only so many bytes.

A FIFO, a device or a directory is refused before a byte is read (the open itself is non-blocking, so a
FIFO with no writer cannot hang the launcher), and a file over the limit is refused rather than read.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["UnsafeFileError", "read_user_bytes", "read_user_start", "read_user_text", "MAX_USER_FILE_BYTES"]

MAX_USER_FILE_BYTES = 4 << 20


class UnsafeFileError(Exception):
    """The named path cannot be read as a small text file; the message says why, in a few words."""


def read_user_text(path: str, limit: int = MAX_USER_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file at `path`, at most `limit` bytes; UnsafeFileError otherwise."""
    data = read_user_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnsafeFileError(f"is not UTF-8 text (byte {exc.start})") from None


def read_user_bytes(path: str, limit: int = MAX_USER_FILE_BYTES) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; UnsafeFileError otherwise."""
    data, _size = read_user_start(path, limit + 1)
    if len(data) > limit:
        raise UnsafeFileError(f"is larger than {limit} bytes")
    return data


def read_user_start(path: str, count: int) -> tuple[bytes, int]:
    """The first `count` bytes of the regular file at `path`, and its size; UnsafeFileError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafeFileError(_open_problem(exc)) from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise UnsafeFileError(f"is {_kind(status.st_mode)}, not a regular file")
        return _read_at_most(fd, count), status.st_size
    except OSError as exc:
        raise UnsafeFileError(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _read_at_most(fd: int, count: int) -> bytes:
    chunks, total = [], 0
    while total < count:
        chunk = os.read(fd, min(1 << 20, count - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _open_problem(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.EISDIR:
        return "is a directory, not a regular file"
    return f"cannot be opened ({exc.strerror or exc})"


def _kind(mode: int) -> str:
    kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")]
    return next((name for test, name in kinds if test(mode)), "not a file")
