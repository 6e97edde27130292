"""A rank that imports torch.distributed (where a rank 0 hosts the store of a direct launch), all_reduces over gloo,
and records the launcher's internal variables as it sees them, and its parent's pid."""

import os

import torch
import torch.distributed as dist

from _rank import mark_started

NAMES = ("ACCEL_STORE_FD", "ACCEL_LAUNCHER_PID", "ACCEL_NODE_JOB", "ACCEL_COMPILE_BACKEND_SOURCE")

dist.init_process_group("gloo")
try:
    total = torch.tensor([1.0])
    dist.all_reduce(total)
finally:
    dist.destroy_process_group()
mark_started(total=total.item(), ppid=os.getppid(), **{name: repr(os.environ.get(name)) for name in NAMES})
