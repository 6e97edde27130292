"""faulthandler's dump of a rank's threads, read back: each thread's frames, innermost first, and which frames are
the user's own code (not the standard library, not an installed package, not the launcher).
"""

from __future__ import annotations

import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Frame", "Thread", "read_dump", "is_user_frame", "main_thread"]

_THREAD = re.compile(r"^(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):$")
_FRAME = re.compile(r'^  File "(.*)", line (\d+|\?\?\?) in (.*)$')
_ROOT = Path(__file__).resolve().parents[3]
_OURS = tuple(f"{_ROOT / package}/" for package in ("launcher", "accelerators"))  # the bootstrap's frames, and ours
_LIBRARIES = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})
_PACKAGE_FOLDERS = ("/site-packages/", "/dist-packages/")


@dataclass(frozen=True, order=True)
class Frame:
    """One line of a stack: `File "path", line N in name`."""

    path: str
    line: str
    name: str

    def short(self) -> str:
        """`train.py:88 in load_batch` for the user's code, `torch/distributed/distributed_c10d.py:2951 in
        all_reduce` for a package's, the full path otherwise."""
        return f"{short_path(self.path, is_user_frame(self))}:{self.line} in {self.name}"


Thread = tuple[Frame, ...]  # innermost frame first, as faulthandler writes them


def read_dump(text: str) -> tuple[Thread, ...]:
    """Every thread with a Python frame, in faulthandler's order; a thread without one (gloo's, the store's) is
    left out."""
    threads: list[list[Frame]] = []
    for line in text.splitlines():
        if _THREAD.match(line):
            threads.append([])
            continue
        found = _FRAME.match(line)
        if found and threads:
            threads[-1].append(Frame(*found.groups()))
    return tuple(tuple(frames) for frames in threads if frames)


def main_thread(threads: tuple[Thread, ...]) -> Thread | None:
    """The thread that runs the program: the one that runs a module's body (the bootstrap's, the program's)."""
    for thread in threads:
        if any(frame.name == "<module>" for frame in thread):
            return thread
    return threads[0] if threads else None


def is_user_frame(frame: Frame) -> bool:
    """Whether a frame is the user's own code."""
    path = frame.path
    if path.startswith("<") or path.startswith(_OURS) or any(folder in path for folder in _PACKAGE_FOLDERS):
        return False
    return not path.startswith(_LIBRARIES)


def short_path(path: str, user: bool) -> str:
    """The file's name for the user's code; from the package on for an installed one or the standard library's."""
    if user:
        return Path(path).name
    for folder in _PACKAGE_FOLDERS:
        if folder in path:
            return path.split(folder, 1)[1]
    library = next((folder for folder in _LIBRARIES if path.startswith(folder + "/")), None)
    return path[len(library) + 1:] if library is not None else path
