"""Prints dynamo's counters (graphs, graph breaks, recompiles) and the steps the progress file counted, for a model
compiled and an optimizer step inside a compiled function; with `on`, the rank's progress hook is installed first
(as the bootstrap does) and torch must not be imported by it."""

import json
import sys

if sys.argv[1] == "on":
    from launcher.rank.progress import note_progress

    note_progress()
    assert "torch" not in sys.modules, "the progress hook imported torch"

import torch
from torch._dynamo.utils import counters

model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
forward = torch.compile(model, backend="eager")


@torch.compile(backend="eager")
def compiled_step() -> None:
    optimizer.step()


for _ in range(3):
    optimizer.zero_grad()
    forward(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    compiled_step()
print(json.dumps({kind: dict(counters[kind]) for kind in ("stats", "graph_break", "recompiles")}, sort_keys=True))
