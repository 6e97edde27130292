"""Every rank compiles one graph; rank 1 compiles a second (a new shape), then all end well."""

import torch
import torch.distributed as dist

from _rank import mark_started


def forward(x):
    return x * 2 + 1


compiled = torch.compile(forward, backend="eager", dynamic=False)
dist.init_process_group("gloo")
mark_started()
compiled(torch.ones(2))
if dist.get_rank() == 1:
    compiled(torch.ones(3))
dist.barrier()
dist.destroy_process_group()
