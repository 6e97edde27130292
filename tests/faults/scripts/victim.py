"""Rank CULPRIT (default 1) leaves after a barrier with exit 1 (at once, without an interpreter's shutdown); the
other ranks, in an all_reduce with it, then fail with gloo's 'Connection closed by peer': failures caused by the
culprit's."""

import os
import sys

import torch
import torch.distributed as dist

from _rank import mark_started

dist.init_process_group("gloo")
mark_started()
dist.barrier()
if dist.get_rank() == int(os.environ.get("CULPRIT", "1")):
    dist.destroy_process_group()
    print(f"rank {os.environ['RANK']}: leaving with exit 1", file=sys.stderr, flush=True)
    os._exit(1)  # at once: an interpreter's shutdown could end after its victim's failure
try:
    dist.all_reduce(torch.ones(1))
finally:
    dist.destroy_process_group()
