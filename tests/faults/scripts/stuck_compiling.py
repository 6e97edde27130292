"""Rank 1 is stuck compiling (its backend hangs at the frame's second compile, a recompile for a new shape) while
rank 0 waits for it in an all_reduce; rank 1 writes $RECORD_DIR/compiling just before (bounded: 300 s)."""

import os
import time

import torch
import torch.distributed as dist

from _rank import mark_started

compiles: list[int] = []


def hanging_backend(graph, example_inputs):
    compiles.append(1)
    if os.environ["RANK"] == "1" and len(compiles) == 2:
        time.sleep(300)
    return graph.forward


def forward(x):
    return x * 2 + 1


compiled = torch.compile(forward, backend=hanging_backend)
dist.init_process_group("gloo")
compiled(torch.ones(2))
mark_started()
if dist.get_rank() == 1:
    open(os.path.join(os.environ["RECORD_DIR"], "compiling"), "w").close()
    compiled(torch.ones(3))
dist.all_reduce(torch.ones(1))
dist.destroy_process_group()
