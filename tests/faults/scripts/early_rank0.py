"""Rank 0 dies before the others are done meeting (EARLY_HOW=exit: exit 7 before importing torch, so no store
was ever hosted; EARLY_HOW=kill: SIGKILL right after hosting it); every other rank waits in init_process_group."""

import os
import signal
import sys

from _rank import mark_started

mark_started()
if os.environ["RANK"] == "0" and os.environ["EARLY_HOW"] == "exit":
    sys.exit(7)

import torch.distributed as dist  # noqa: E402  (rank 0 hosts the job's store from here)

if os.environ["RANK"] == "0":
    os.kill(os.getpid(), signal.SIGKILL)
dist.init_process_group("gloo")
dist.destroy_process_group()
