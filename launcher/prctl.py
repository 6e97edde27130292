"""Linux's prctl(2), for the two process settings the launcher (subreaper) and its ranks (death signal) use."""

from __future__ import annotations

import ctypes
import sys

__all__ = ["prctl", "PR_SET_PDEATHSIG", "PR_SET_CHILD_SUBREAPER"]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> bool:
    """Set `option` to `value` for this process; False where it failed or this is not Linux."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(option, value, 0, 0, 0) == 0
