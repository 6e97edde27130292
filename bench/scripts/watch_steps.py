"""A DDP training loop on gloo for bench/bench_watch.py: a small model, BENCH_BLOCKS blocks of BENCH_BLOCK steps
after a warm-up, the rank's progress hook taken out of torch's global optimizer hooks in half the blocks (off, on, on, off) (its
private dict, for this comparison only), so that both halves run under the same load, the ranks switching at the
same steps; rank 0 prints each block's steps per second, `on` or `off`. BENCH_WATCH=off: off in every block."""

import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

hooks = sys.modules["torch.optim.optimizer"]._global_optimizer_post_hooks  # torch.optim deletes its attribute
ours = dict(hooks)
dist.init_process_group("gloo")
torch.manual_seed(0)
width = int(os.environ.get("BENCH_WIDTH", "256"))
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(),
                                                    torch.nn.Linear(width, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
batch = torch.randn(64, width)


def steps(count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        optimizer.zero_grad()
        model(batch).pow(2).mean().backward()
        optimizer.step()
    return count / (time.perf_counter() - started)


steps(50)
block = int(os.environ.get("BENCH_BLOCK", "50"))
for number in range(int(os.environ.get("BENCH_BLOCKS", "20"))):
    on = number % 4 in (1, 2) and os.environ.get("BENCH_WATCH") != "off"  # off, on, on, off: no order favoured
    hooks.clear()
    hooks.update(ours if on else {})
    rate = steps(block)
    if dist.get_rank() == 0:
        print(f"{'on' if on else 'off'} {rate:.3f}")
dist.destroy_process_group()
