"""A nanoGPT-like first training step under DDP and torch.compile: prints FIRST_STEP <epoch seconds> MISSES <n>
once the step is done (rank 0 only), so the bench measures from the command to the first compiled step. With
$FAIL_FIRST_ATTEMPT the first attempt prints FAILED <epoch seconds> instead and fails (after emptying the node's
inductor cache where it is `fresh`: a node replaced by a new one), so the bench measures a restart."""

import gc
import os
import shutil
import sys
import time

import torch
import torch.distributed as dist
from torch._dynamo.utils import counters
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 256), torch.nn.GELU(),
                            torch.nn.Linear(256, 8))
ddp = DistributedDataParallel(torch.compile(model))
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
ddp(torch.randn(16, 64)).pow(2).mean().backward()
optimizer.step()
dist_rank = dist.get_rank()
misses = torch.tensor([float(counters["inductor"]["fxgraph_cache_miss"])])
dist.all_reduce(misses)
failing = os.environ.get("FAIL_FIRST_ATTEMPT") and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
if dist.get_rank() == 0:
    print(f"{'FAILED' if failing else 'FIRST_STEP'} {time.time()} MISSES {int(misses.item())}", flush=True)
# The reducer lets go of the process group before it is destroyed (tests/scripts/compiled_ddp_step.py says why).
del ddp, optimizer
gc.collect()
dist.destroy_process_group()
if failing:
    if os.environ["FAIL_FIRST_ATTEMPT"] == "fresh" and dist_rank == 0:
        shutil.rmtree(os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)
    sys.exit(1)
