"""Each rank's progress, for the launcher's watch (docs/CONTRACT.md section 9), with no change to the program.

When the user's code imports `torch.optim.optimizer` (torch's own import does; nothing is imported here), one
global optimizer-step post hook of torch's (`register_optimizer_step_post_hook`) is registered: it sees every
torch optimizer's step, plain torch's, DeepSpeed's (its CPU Adam included), HF Trainer's and Lightning's. At
each step it writes into this rank's fixed-size file in the launcher's folder (PROGRESS_FILE), mapped into memory
(no system call; `os.pwrite` where the file cannot be mapped), the step's number, its end (wall clock) and the main
thread's CPU time then into a ring of RING slots; the header, rewritten only when the phase changes, holds the phase
and the program's start. A step costs two clock reads: about 5 microseconds right after a real step (with a system
call to write, 12; bench/RESULTS-watch.md). The launcher reads the file twice a second
(launcher/run/watch/): the count of steps is the newest slot's number.

The hook does nothing while dynamo traces (`torch.compiler.is_compiling()`, which dynamo folds to a constant): a
step inside a compiled region adds no graph break and no recompile, and is not counted. A process the rank
forks writes nothing.
"""

from __future__ import annotations

import atexit
import mmap
import os
import struct
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from launcher.contract.names import PROGRESS_FILE, STACKS_DIR_VAR
from launcher.rank.after_import import after_import
from launcher.shared_files import UnsafeFileError, read_user_start

__all__ = ["note_progress", "read_progress_record", "HEADER", "SLOT", "RING", "MAGIC", "PHASES", "RECORD_BYTES"]

MAGIC = b"ACP1"
HEADER = struct.Struct("<4sIQd")  # magic, phase, steps when the phase was written, the program's start (time.time)
SLOT = struct.Struct("<Qdd")  # the step's number, its end (time.time), the main thread's CPU seconds then
RING = 64
RECORD_BYTES = HEADER.size + RING * SLOT.size
PHASES = ("starting", "importing", "training", "exited")  # by code; "starting": no file yet
_IMPORTING, _TRAINING, _EXITED = 1, 2, 3


def read_progress_record(folder: str, rank: int) -> bytes:
    """Rank `rank`'s record as it wrote it in `folder`, read as untrusted input (without blocking, a regular file
    reached through no link, RECORD_BYTES at most); b"" when there is none readable."""
    try:
        data, _size = read_user_start(os.path.join(folder, PROGRESS_FILE.format(rank=rank)), RECORD_BYTES,
                                      follow_symlinks=False)
    except UnsafeFileError:
        return b""
    return data


def note_progress() -> None:
    """Open this rank's progress file (when the launcher gave a folder) and count the optimizer steps once the
    user's code imports torch.optim.optimizer; the phase `importing` until the first step."""
    folder = os.environ.get(STACKS_DIR_VAR)
    if not folder:
        return
    path = os.path.join(folder, PROGRESS_FILE.format(rank=os.environ.get("RANK", "0")))
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    record = _Progress(fd)
    after_import("torch.optim.optimizer", record.register)
    atexit.register(record.exited)
    os.register_at_fork(after_in_child=record.leave_to_the_rank)


class _Progress:
    """The rank's record: a step's slot at each step, the header at each change of phase."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd
        self._map = _mapped(fd)
        self._steps = 0
        self._started = time.time()
        self._compiling: Callable[[], bool] = _never
        self._write_header(_IMPORTING)

    def register(self, optimizer_module: ModuleType) -> None:
        """torch's global post hook; torch.compiler's is_compiling, where torch has it (torch imports it itself)."""
        compiler = getattr(optimizer_module.torch, "compiler", None)
        self._compiling = getattr(compiler, "is_compiling", _never)
        optimizer_module.register_optimizer_step_post_hook(self.stepped)

    def stepped(self, _optimizer: Any, _args: Any, _kwargs: Any) -> None:
        """An optimizer step ended: its slot, then the header."""
        if self._compiling() or self._fd is None:
            return
        self._steps += 1
        self._write(SLOT.pack(self._steps, time.time(), time.thread_time()),
                    HEADER.size + (self._steps % RING) * SLOT.size)
        if self._steps == 1:
            self._write_header(_TRAINING)

    def exited(self) -> None:
        self._write_header(_EXITED)

    def leave_to_the_rank(self) -> None:
        self._fd = self._map = None

    def _write_header(self, phase: int) -> None:
        self._write(HEADER.pack(MAGIC, phase, self._steps, self._started), 0)

    def _write(self, data: bytes, offset: int) -> None:
        if self._map is not None:
            self._map[offset:offset + len(data)] = data
            return
        if self._fd is None:
            return
        try:
            os.pwrite(self._fd, data, offset)
        except OSError:  # never a reason for the user's step to fail
            self._fd = None


def _mapped(fd: int) -> mmap.mmap | None:
    """The whole record mapped into memory, its blocks allocated first (a write to a mapped page the disk cannot
    hold would end the rank with SIGBUS); None where either cannot be done (then each write is a system call)."""
    try:
        os.posix_fallocate(fd, 0, RECORD_BYTES)
        return mmap.mmap(fd, RECORD_BYTES)
    except (OSError, ValueError):
        return None


def _never() -> bool:
    return False
