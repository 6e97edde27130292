"""Rank 0 kills itself with the signal named in argv[1] (SIGSEGV by a real NULL read); others wait."""

import ctypes
import os
import signal
import sys

from _rank import mark_started, sleep_forever

mark_started()
if os.environ["RANK"] == "0":
    if sys.argv[1] == "segfault":
        ctypes.string_at(0)
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
sleep_forever()
