"""Rank 1 enters uninterruptible sleep (D state) for real: it vforks, and its child sleeps without exec'ing (the
parent waits in the kernel until the child execs or exits); the other ranks wait to be stopped."""

import ctypes
import os

from _rank import mark_started, sleep_forever

mark_started()
if os.environ["RANK"] == "1":
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.vfork() == 0:  # the child: C calls only, then gone (a sweep ends it sooner)
        libc.sleep(120)
        libc._exit(0)
sleep_forever()
