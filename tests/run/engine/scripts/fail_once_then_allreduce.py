"""A rank whose last rank fails the first attempt (exit status 3, no traceback); in the next, every rank joins an
all_reduce of (rank + 1) over gloo and records the sum and its attempt in $RECORD_DIR/rank-<RANK>.json."""

import json
import os
import sys

import torch
import torch.distributed as dist

attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
if attempt == 0 and os.environ["RANK"] == str(int(os.environ["WORLD_SIZE"]) - 1):
    sys.exit(3)
dist.init_process_group("gloo")
total = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(total)
dist.destroy_process_group()
with open(os.path.join(os.environ["RECORD_DIR"], f"rank-{os.environ['RANK']}.json"), "w") as handle:
    json.dump({"sum": total.item(), "attempt": attempt}, handle)
