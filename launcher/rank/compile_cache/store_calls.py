"""The job's store as the compile cache calls it (docs/CONTRACT.md section 7): reached and answered within
COMPILE_STORE_SECONDS a call, and the first call that fails turns the job's share off for this rank, said in one
line; the rank then shares within its node only, and compiles the rest itself.

torch's TCPStore client writes its own account of a failed call before it raises: c10d's warning or error with a
C++ frame dump, and a connect it retries. Those lines are held back for the length of the compile cache's own calls
only, by raising c10's log level (`FLAGS_caffe2_log_level`, the flag TORCH_CPP_LOG_LEVEL sets when torch starts)
around each call and putting it back after; a C++ line another thread writes in that moment is held back too.
Where the flag is not found, torch's lines stand.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from launcher.contract.hosts import this_host
from launcher.contract.names import COMPILE_STORE_SECONDS

__all__ = ["StoreCalls", "StoreOff", "connect"]

_FATAL = 3  # c10's level for FATAL: c10d's warnings and errors about a failing call are not written


class StoreOff(Exception):
    """The job's store failed: this rank calls it no more."""


class StoreCalls:
    """`calls("get", key)`: the store's method, called with c10d's own lines held back; StoreOff once one failed."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.off = False

    def __call__(self, method: str, *args: Any) -> Any:
        if self.off:
            raise StoreOff
        try:
            with quiet_cpp_logs():
                return getattr(self._store, method)(*args)
        except RuntimeError as error:  # torch's DistError and its kinds
            self.off = True
            _say(f"the job's store at {self._store.host}:{self._store.port} failed ({_first_line(error)})")
            raise StoreOff from None


def connect(host: str, port: int) -> Any | None:
    """A client of the job's TCPStore, reached within COMPILE_STORE_SECONDS and given as long for each call; None
    when it was not reached (said in one line)."""
    from torch.distributed import TCPStore

    try:
        with quiet_cpp_logs():  # torch's connect may wait its timeout twice over (a retry after a random delay)
            store = TCPStore(host, port, is_master=False, timeout=timedelta(seconds=COMPILE_STORE_SECONDS / 2),
                             wait_for_workers=False)
            store.set_timeout(timedelta(seconds=COMPILE_STORE_SECONDS))
            return store
    except RuntimeError as error:
        _say(f"the job's store at {host}:{port} was not reached within {COMPILE_STORE_SECONDS} s "
             f"({_first_line(error)})")
        return None


@contextlib.contextmanager
def quiet_cpp_logs() -> Iterator[None]:
    """c10's C++ log lines below FATAL are not written while the block runs."""
    flag = _log_level()
    before = flag.value if flag is not None else _FATAL
    if flag is not None:
        flag.value = max(before, _FATAL)
    try:
        yield
    finally:
        if flag is not None:
            flag.value = before


@functools.cache
def _log_level() -> ctypes.c_int | None:
    """c10's log level, in the libc10 torch loaded (torch is loaded: inductor is calling)."""
    import torch

    try:
        return ctypes.c_int.in_dll(ctypes.CDLL(os.path.join(torch.__path__[0], "lib", "libc10.so")),
                                   "FLAGS_caffe2_log_level")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _say(what: str) -> None:
    print(f"accel-launch: rank {os.environ.get('RANK', '?')} on {this_host()}: {what}; this rank shares compiles "
          "within its node only from now on", file=sys.stderr, flush=True)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return (lines[0] if lines else type(error).__name__)[:200]
