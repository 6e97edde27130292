"""A rank of a two-node job that meets the others at init_process_group, one way per argv[1]:

- `env`: env:// (the launcher's store), then a barrier;
- `absent-node-1`: node 1's ranks never call init_process_group (they sleep), node 0's do;
- `own-store`: a TCPStore of the program's own at $OWN_STORE_PORT (global rank 0 hosts it), handed to
  init_process_group as `store=`.
It records its start, and `met` once init_process_group returned.
"""

import os
import sys
from datetime import timedelta

import torch.distributed as dist

from _rank import mark_started, sleep_forever

how = sys.argv[1]
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
mark_started()
if how == "absent-node-1" and rank >= int(os.environ["LOCAL_WORLD_SIZE"]):
    sleep_forever()
elif how == "own-store":
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["OWN_STORE_PORT"]), world, is_master=rank == 0,
                          timeout=timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
else:
    dist.init_process_group("gloo")
try:
    open(os.path.join(os.environ["RECORD_DIR"], f"met-{rank}"), "w").close()
    dist.barrier()
finally:
    dist.destroy_process_group()
