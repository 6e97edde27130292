"""Plain DDP on gloo for the watch's tests, every step recorded in $RECORD_DIR/steps-<RANK>: WATCH_STEPS steps;
rank WATCH_SLOW_RANK does WATCH_SLOW_SECONDS more CPU work a step (in `load_batch`); rank WATCH_STUCK_RANK stays
in `load_batch` at step WATCH_STUCK_STEP (bounded: 300 s); every WATCH_EVAL_EVERY steps, rank 0 writes a checkpoint
for WATCH_CHECKPOINT_SECONDS and every rank evaluates for WATCH_EVAL_SECONDS."""

import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from _rank import mark_started

env = os.environ.get
RANK = int(env("RANK", "0"))
SLOW = float(env("WATCH_SLOW_SECONDS", "0")) if env("WATCH_SLOW_RANK") == str(RANK) else 0.0
STUCK = int(env("WATCH_STUCK_STEP", "0")) if env("WATCH_STUCK_RANK") == str(RANK) else 0
EVAL_EVERY = int(env("WATCH_EVAL_EVERY", "0"))


def spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def load_batch(step: int) -> torch.Tensor:
    if step == STUCK:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            time.sleep(0.05)
    end = time.thread_time() + SLOW  # the slow rank's extra work, here
    while time.thread_time() < end:
        pass
    return torch.randn(32, 64)


def evaluate(model: torch.nn.Module, step: int) -> None:
    if RANK == 0:
        spin(float(env("WATCH_CHECKPOINT_SECONDS", "0")))  # a checkpoint: rank 0 alone
    spin(float(env("WATCH_EVAL_SECONDS", "0")))
    with torch.no_grad():
        model(torch.randn(8, 64))


dist.init_process_group("gloo")
torch.manual_seed(RANK)
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
mark_started()
record = os.path.join(env("RECORD_DIR"), f"steps-{RANK}")
for step in range(1, int(env("WATCH_STEPS", "40")) + 1):
    loss = model(load_batch(step)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    spin(float(env("WATCH_STEP_SECONDS", "0.03")))
    optimizer.step()
    with open(record, "w", encoding="utf-8") as handle:
        handle.write(f"{step}\n")
    if EVAL_EVERY and step % EVAL_EVERY == 0:
        evaluate(model, step)
dist.destroy_process_group()
