"""What a rank leaves in the launcher's stacks folder, read as untrusted input (docs/CONTRACT.md section 8): the
rank's program can put anything at those paths (a FIFO, a folder, a link, a file of any size), so every read is
non-blocking, of a regular file reached through no link, and bounded (launcher/shared_files.py).

Before a rank is asked, its dump file must still be the file its faulthandler writes to: the file's first line
(DUMP_HEADER, launcher/rank/launcher_link.py) names the rank's pid and descriptor, and /proc/PID/fd/N must be that
same file (device and inode). A rank whose descriptor was closed, or now holds another file, is not asked: its dump
would land in a file of its own.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from launcher.rank.launcher_link import DUMP_HEADER
from launcher.shared_files import UnsafeFileError, read_user_start

__all__ = ["DumpHeader", "read_header", "dump_file_problem", "dump_size", "read_dump_text", "DUMP_BYTES"]

DUMP_BYTES = 1 << 20  # faulthandler writes at most 100 threads of 100 frames: far less than this
_HEADER_BYTES = 128
_NUMBER = r"(\d{1,10})"
_HEADER = re.compile(re.escape(DUMP_HEADER).replace(r"\{pid\}", _NUMBER).replace(r"\{fd\}", _NUMBER).encode())

DumpHeader = tuple[int, int]  # (pid, descriptor) the file's first line names


def read_header(path: Path) -> DumpHeader | None:
    """The pid and descriptor the dump file at `path` names; None when it names none (not a regular file, no such
    file, or not our first line)."""
    try:
        start, _size = read_user_start(str(path), _HEADER_BYTES, follow_symlinks=False)
    except UnsafeFileError:
        return None
    found = _HEADER.match(start)
    return (int(found.group(1)), int(found.group(2))) if found else None


def dump_file_problem(path: Path, pid: int, header: DumpHeader | None) -> str | None:
    """Why process `pid` must not be asked, with `header` read from its dump file at `path`: the file is not its
    faulthandler's any more (None: it is)."""
    try:
        here = os.lstat(path)
    except OSError:
        return f"its dump file {path.name} is gone from the launcher's folder: not asked"
    if header is None or header[0] != pid:
        try:
            read_user_start(str(path), 0, follow_symlinks=False)
        except UnsafeFileError as exc:
            return f"its dump file {path.name} in the launcher's folder {exc}: not asked"
        return f"its dump file {path.name} in the launcher's folder is not the one it opened: not asked"
    fd = header[1]
    try:
        held = os.stat(f"/proc/{pid}/fd/{fd}")
    except FileNotFoundError:
        return f"closed the file its stack dumps go to (descriptor {fd}): not asked"
    except OSError as exc:
        return f"its descriptor {fd} cannot be looked at ({exc.strerror or exc}): not asked"
    if (held.st_dev, held.st_ino) == (here.st_dev, here.st_ino):
        return None
    if held.st_nlink == 0:
        return f"its dump file {path.name} was removed or replaced in the launcher's folder: not asked"
    return (f"closed the file its stack dumps go to, and its descriptor {fd} is now another file: not asked, so "
            "that no dump lands in a file of its own")


def dump_size(path: Path) -> int:
    """The size of the regular file at `path` (0: none there, or not a regular file), without opening it."""
    try:
        info = os.lstat(path)
    except OSError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def read_dump_text(path: Path, offset: int) -> str | None:
    """What was written to the dump file at `path` from `offset` on, at most DUMP_BYTES (None: unreadable)."""
    try:
        data, _size = read_user_start(str(path), DUMP_BYTES, follow_symlinks=False, offset=offset)
    except UnsafeFileError:
        return None
    return data.decode("utf-8", "replace")
