"""A rank as most training scripts start: its first line, then torch, a gloo process group and an all_reduce.

Stamps wall-clock times into $BENCH_STAMPS: `first-<RANK>` at its first line, `end-<RANK>` just before it
exits. `--compile` adds a torch.compile of a small model, called once, with the default backend: `eager`,
set here where no launcher of ours set it (the benchmark has accel-launch resolve `eager`), so every
contender does the same work; `--import-dynamo`
imports torch._dynamo right after torch, as the older benchmark scenario did.
"""

import os
import sys
import time


def stamp(name: str) -> None:
    with open(os.path.join(os.environ["BENCH_STAMPS"], f"{name}-{os.environ['RANK']}"), "w") as handle:
        handle.write(repr(time.time()))


stamp("first")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

if "--import-dynamo" in sys.argv:
    import torch._dynamo  # noqa: F401,E402

dist.init_process_group("gloo")
value = torch.ones(4)
dist.all_reduce(value)
assert value[0].item() == dist.get_world_size()
if "--compile" in sys.argv:
    if "ACCEL_COMPILE_BACKEND" not in os.environ:
        torch.compiler.set_default_backend("eager")
    model = torch.compile(torch.nn.Linear(4, 4))
    model(value)
dist.destroy_process_group()
stamp("end")
