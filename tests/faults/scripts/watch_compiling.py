"""After one optimizer step on every rank, rank 1 is stuck compiling (its backend hangs at the frame's first
compile, bounded: 300 s) while rank 0 waits for it in an all_reduce."""

import os
import time

import torch
import torch.distributed as dist

from _rank import mark_started


def hanging_backend(graph, example_inputs):
    if os.environ["RANK"] == "1":
        time.sleep(300)
    return graph.forward


def forward(x):
    return x * 2 + 1


dist.init_process_group("gloo")
weight = torch.nn.Parameter(torch.ones(2))
optimizer = torch.optim.SGD([weight], lr=0.1)
weight.sum().backward()
optimizer.step()
mark_started()
torch.compile(forward, backend=hanging_backend)(torch.ones(2))
dist.all_reduce(torch.ones(1))
dist.destroy_process_group()
