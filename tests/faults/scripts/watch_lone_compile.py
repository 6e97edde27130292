"""Two ranks step a compiled function for 8 steps, every step recorded in $RECORD_DIR/steps-<RANK>; both compile it
before their first step, rank 1 for WATCH_FIRST_SECONDS longer. From step 4 on, the input has a new shape: with
WATCH_ALONE=1 on rank 1 only, whose recompile then waits for $RECORD_DIR/go (bounded: 120 s) while rank 0 waits
in the all_reduce; otherwise on both, each recompiling for WATCH_RECOMPILE_SECONDS."""

import os
import time

import torch
import torch.distributed as dist

from _rank import mark_started

RANK = int(os.environ["RANK"])
ALONE = os.environ.get("WATCH_ALONE") == "1"
RECORD = os.environ["RECORD_DIR"]
compiles: list[int] = []


def backend(graph, example_inputs):
    compiles.append(1)
    if len(compiles) == 1 and RANK == 1:
        time.sleep(float(os.environ.get("WATCH_FIRST_SECONDS", "0")))
    elif len(compiles) == 2 and ALONE:
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(RECORD, "go")) and time.monotonic() < deadline:
            time.sleep(0.05)
    elif len(compiles) == 2:
        time.sleep(float(os.environ.get("WATCH_RECOMPILE_SECONDS", "0")))
    return graph.forward


def forward(weight, batch):
    return (batch @ weight).pow(2).mean()


compiled = torch.compile(forward, backend=backend, dynamic=False)
dist.init_process_group("gloo")
weight = torch.nn.Parameter(torch.ones(3))
optimizer = torch.optim.SGD([weight], lr=0.01)
mark_started()
for step in range(1, 9):
    rows = 4 if step > 3 and (RANK == 1 or not ALONE) else 2
    optimizer.zero_grad()
    compiled(weight, torch.ones(rows, 3)).backward()
    dist.all_reduce(weight.grad)
    optimizer.step()
    with open(os.path.join(RECORD, f"steps-{RANK}"), "w", encoding="utf-8") as handle:
        handle.write(f"{step}\n")
dist.destroy_process_group()
