"""Ranks 0 and 2 wait in an all_reduce that rank 1 never reaches: it loops in a function of its own (bounded)."""

import time

import torch
import torch.distributed as dist

from _rank import mark_started


def load_batch() -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        time.sleep(0.05)


dist.init_process_group("gloo")
mark_started()
if dist.get_rank() == 1:
    load_batch()
dist.all_reduce(torch.ones(1))
dist.destroy_process_group()
