"""Files shared with other processes and users: read without ever blocking, published whole, locked within a bound.

Reading a file the user named: regular files only, and only so many bytes.
A FIFO, a device or a directory is refused before a byte is read (the open itself is non-blocking, so a
FIFO with no writer cannot hang the launcher), and a file over the limit is refused rather than read.
A file the launcher will trust (`own_only`, as ssh treats `~/.ssh`) must also be reached through no
symbolic link, be owned by this user and be writable by no one else. A file it reads without being named
(`unshared`: `./.env`, `.deepspeed_env`) must be the user's own or root's, and not writable by others: another
user's variables (an `LD_PRELOAD`) are never taken silently.

Publishing a file that other processes read (`publish_file`): whole or not at all, through a temporary file beside it
(mode 0600), then a rename.

A reader never sees a half-written file, and a writer stopped part-way leaves the old file or none.
Nothing is ever created through a symbolic link: the temporary file is made with O_CREAT|O_EXCL (and
O_NOFOLLOW) by `mkstemp`, and the rename replaces a link at `path` itself, never its target. Used by the
facts cache (readers are other processes of the node) and by a rank's refusal (the launcher reads the
error file of the first rank that failed).

A flock taken within a bound (`lock_within`): every lock between a node's processes (the backend list's cache, a
compiled graph's node lock) waits this way, never without end.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import stat
import time
from pathlib import Path

__all__ = ["UnsafeFileError", "ForeignFileError", "ownership_problem", "read_user_bytes", "read_user_start",
           "read_user_text", "MAX_USER_FILE_BYTES", "publish_file", "lock_within"]

MAX_USER_FILE_BYTES = 4 << 20


class UnsafeFileError(Exception):
    """The named path cannot be read as a small text file; the message says why, in a few words."""


class ForeignFileError(UnsafeFileError):
    """The file is not one the launcher may trust (`own_only`, `unshared`): another user could write it."""


def read_user_text(path: str, limit: int = MAX_USER_FILE_BYTES, *, follow_symlinks: bool = True,
                   own_only: bool = False, unshared: bool = False) -> str:
    """The UTF-8 text of the regular file at `path`, at most `limit` bytes; UnsafeFileError otherwise."""
    data = read_user_bytes(path, limit, follow_symlinks=follow_symlinks, own_only=own_only, unshared=unshared)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnsafeFileError(f"is not UTF-8 text (byte {exc.start})") from None


def read_user_bytes(path: str, limit: int = MAX_USER_FILE_BYTES, *, follow_symlinks: bool = True,
                    own_only: bool = False, unshared: bool = False) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; UnsafeFileError otherwise.

    Without `follow_symlinks` a symbolic link is refused; `own_only` refuses one too, and a file that is not
    this user's own (`ownership_problem`); `unshared` a file another user could write (its owner, or anyone)."""
    data, _size = read_user_start(path, limit + 1, follow_symlinks=follow_symlinks, own_only=own_only,
                                  unshared=unshared)
    if len(data) > limit:
        raise UnsafeFileError(f"is larger than {limit} bytes")
    return data


def read_user_start(path: str, count: int, *, follow_symlinks: bool = True, own_only: bool = False,
                    unshared: bool = False, offset: int = 0) -> tuple[bytes, int]:
    """The first `count` bytes of the regular file at `path` from `offset` on (a negative one counts from its end:
    a log's tail), and its size; UnsafeFileError otherwise (`follow_symlinks` and `own_only` as for
    `read_user_bytes`)."""
    no_follow = os.O_NOFOLLOW if own_only or not follow_symlinks else 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | no_follow)
    except OSError as exc:
        raise UnsafeFileError(_open_problem(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFileError(f"is {_kind(info.st_mode)}, not a regular file")
        problem = ownership_problem(info) if own_only else ownership_problem(info, shared=True) if unshared else None
        if problem is not None:
            raise ForeignFileError(problem)
        if offset:
            os.lseek(fd, offset if offset > 0 else max(0, info.st_size + offset), os.SEEK_SET)
        return _read_at_most(fd, count), info.st_size
    except OSError as exc:
        raise UnsafeFileError(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def ownership_problem(info: os.stat_result, *, folder: bool = False, shared: bool = False) -> str | None:
    """Why `info` (an lstat or fstat) is not a regular file (with `folder`: a folder) of this user's own, or
    None: it is of another kind, owned by another user, or writable by group or others. With `shared`, root's
    files and a group's write are allowed, as for a file the user's team keeps: only another user, and
    others' write, are problems."""
    is_kind, kind = (stat.S_ISDIR, "a folder") if folder else (stat.S_ISREG, "a regular file")
    if not is_kind(info.st_mode):
        return f"is {_kind(info.st_mode)}, not {kind}"
    if info.st_uid != os.geteuid() and not (shared and info.st_uid == 0):
        return f"is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})"
    if info.st_mode & (stat.S_IWOTH if shared else stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


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
    if exc.errno == errno.ELOOP:
        return "is a symbolic link"
    if exc.errno == errno.EISDIR:
        return "is a directory, not a regular file"
    return f"cannot be opened ({exc.strerror or exc})"


def _kind(mode: int) -> str:
    kinds = [(stat.S_ISREG, "a regular file"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
             (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket")]
    return next((name for test, name in kinds if test(mode)), "not a file")


def publish_file(path: str | Path, text: str | bytes) -> None:
    """Put `text` (or bytes) at `path` through a temporary file in the same folder (mode 0600); OSError when it
    cannot."""
    import tempfile  # not at import: every rank imports this module, few ever write

    folder, name = os.path.split(os.fspath(path))
    fd, temp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with (os.fdopen(fd, "wb") if isinstance(text, bytes) else os.fdopen(fd, "w", encoding="utf-8")) as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


logger = logging.getLogger(__name__)
_POLL_SECONDS = 0.05  # how often a lock another process holds is tried again (no process of ours is watched)


def lock_within(fd: int, seconds: float) -> bool:
    """Take an exclusive flock on `fd`, trying until `seconds` have passed (0: once); False when it could not be
    had."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(_POLL_SECONDS, left))
        except OSError as exc:  # ENOLCK, a file system without locks: go on without one
            logger.debug("the lock could not be taken: %s", exc)
            return False
