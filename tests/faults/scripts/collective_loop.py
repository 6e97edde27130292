"""Every rank joins a gloo group and all-reduces in a loop (LOOP_SECONDS, default 120; 3 after a restart),
so that a lost peer is noticed."""

import os
import time

import torch
import torch.distributed as dist

from _rank import mark_started

dist.init_process_group("gloo")
mark_started(world=os.environ["WORLD_SIZE"], attempt=os.environ.get("TORCHELASTIC_RESTART_COUNT"))
try:
    restarted = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0"
    deadline = time.monotonic() + (3 if restarted else float(os.environ.get("LOOP_SECONDS", "120")))
    while time.monotonic() < deadline:
        dist.all_reduce(torch.ones(1))
        time.sleep(0.1)
finally:
    dist.destroy_process_group()
